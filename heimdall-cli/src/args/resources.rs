//! `heimdall resource`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use heimdall_wire::ResourceStatus;

use super::WaitArgs;

/// The input of a create or change: inline JSON or a file.
#[derive(Clone, Debug, Args)]
pub struct InputArgs {
    /// The input, a JSON object, e.g. '{"bucket":"checkout-recibos"}'
    #[arg(long, value_name = "JSON", required_unless_present = "input_file", conflicts_with = "input_file")]
    pub input: Option<String>,
    /// Read the input from a JSON file, or `-` for standard input
    #[arg(long, value_name = "FILE")]
    pub input_file: Option<PathBuf>,
}

/// Where a new Resource goes and what it is.
#[derive(Clone, Debug, Args)]
pub struct NewResourceArgs {
    /// The component it belongs to (id or name)
    #[arg(long)]
    pub component: String,
    /// The schema (id, or a type for its newest version)
    #[arg(long)]
    pub schema: String,
    /// The environment (id or name)
    #[arg(long)]
    pub environment: String,
    /// The Resource's name
    #[arg(long)]
    pub name: String,
}

#[derive(Debug, Subcommand)]
pub enum ResourceCommand {
    /// Request a Resource from a schema
    Create {
        #[command(flatten)]
        new: NewResourceArgs,
        #[command(flatten)]
        input: InputArgs,
        /// Run in this region rather than the account's
        #[arg(long)]
        region: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Bring objects created outside Heimdall under management, without recreating them: the
    /// request is validated like a create; its job imports each object, then applies only if the
    /// plan changes nothing (else it fails IMPORT_WOULD_CHANGE, the plan in the job log)
    Import {
        #[command(flatten)]
        new: NewResourceArgs,
        #[command(flatten)]
        input: InputArgs,
        /// ADDRESS=ID: a resource address inside the schema's module (e.g. aws_s3_bucket.this)
        /// and the object's id at its provider; repeat for each object
        #[arg(long = "import", value_name = "ADDRESS=ID", required = true, value_parser = parse_import)]
        imports: Vec<heimdall_wire::ImportTarget>,
        /// Run in this region rather than the account's
        #[arg(long)]
        region: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// List Resources (deleted ones stay listed)
    List {
        /// Only this component's (id or name)
        #[arg(long)]
        component: Option<String>,
        /// Only this environment's (id or name)
        #[arg(long)]
        environment: Option<String>,
        /// Only Resources in this status
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        /// Only Resources of this schema type (any version)
        #[arg(long = "type", value_name = "TYPE")]
        type_name: Option<String>,
        /// Only Resources on an older version of their schema type than a
        /// new request gets (`resource upgrade` moves them)
        #[arg(long)]
        outdated: bool,
        #[command(flatten)]
        page: super::PageArgs,
    },
    /// Show a Resource, its outputs and its revisions (by id or name)
    Show {
        /// The Resource (id or name)
        resource: String,
    },
    /// Show the plan an approver approves: what the pending revision (or
    /// --revision N) would add, change and destroy, and its SHA-256
    Plan {
        /// The Resource (id or name)
        resource: String,
        /// This revision rather than the pending one
        #[arg(long, value_name = "N")]
        revision: Option<i64>,
    },
    /// Change a Resource's input: a new revision
    Update {
        /// The Resource (id or name)
        resource: String,
        #[command(flatten)]
        input: InputArgs,
        /// Run in this region from now on
        #[arg(long)]
        region: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Move a Resource to another version of its schema (a new module version) without
    /// recreating it: a new revision, applied or awaiting approval as that version says
    Upgrade {
        /// The Resource (id or name)
        resource: String,
        /// The version of the Resource's schema type to move to
        #[arg(long, value_name = "N", visible_alias = "schema-version")]
        to_version: i64,
        /// The input under that version, a JSON object (default: the current revision's)
        #[arg(long, value_name = "JSON", conflicts_with = "input_file")]
        input: Option<String>,
        /// Read that input from a JSON file, or `-` for standard input
        #[arg(long, value_name = "FILE")]
        input_file: Option<PathBuf>,
        /// Allow an older version (its module may not read the state a newer one wrote)
        #[arg(long)]
        allow_downgrade: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Approve the pending revision (never your own request)
    Approve {
        /// The Resource (id or name)
        resource: String,
        /// The revision you read; approving any other is refused (STALE_REVISION)
        #[arg(long, value_name = "N")]
        revision: i64,
        /// The plan you read (its SHA-256, at least 12 hex digits, from
        /// `resource plan`); any other is refused (STALE_PLAN). Left out on
        /// a terminal, the plan is shown and you confirm it
        #[arg(long, value_name = "SHA")]
        plan: Option<String>,
        /// Why, for the record (shown in events and `resource show`)
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Refuse the pending revision (never your own request)
    Refuse {
        /// The Resource (id or name)
        resource: String,
        /// The revision you read
        #[arg(long, value_name = "N")]
        revision: i64,
        /// Why, for the record (shown in events and `resource show`)
        #[arg(long, value_name = "TEXT")]
        reason: Option<String>,
    },
    /// Queue a failed Resource's last operation again
    Retry {
        /// The Resource (id or name)
        resource: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Check a provisioned Resource for drift: a plan of its applied revision against what exists,
    /// never applied. A plan with changes marks it drifted; a clean one clears the mark
    DriftCheck {
        /// The Resource (id or name)
        resource: String,
        /// Wait for the check and say what it found; exits 1 if the Resource drifted
        #[arg(long)]
        wait: bool,
    },
    /// Destroy a Resource (it stays listed as deleted); cancels any apply still queued. On a
    /// terminal it asks first
    Delete {
        /// The Resource (id or name)
        resource: String,
        /// Do not ask (scripts never are asked: only a terminal is)
        #[arg(long, short = 'y')]
        yes: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Stop managing a Resource without destroying anything: it stays listed as abandoned, its
    /// state where it was; `resource import` or `terraform export` takes it up again
    Abandon {
        /// The Resource (id or name)
        resource: String,
    },
}

/// `--status` of `resource list`: the names of [`ResourceStatus`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum StatusArg {
    PendingApproval,
    Queued,
    Applying,
    Provisioned,
    Failed,
    Refused,
    Deleting,
    Deleted,
    Abandoned,
}

impl From<StatusArg> for ResourceStatus {
    fn from(status: StatusArg) -> Self {
        match status {
            StatusArg::PendingApproval => ResourceStatus::PendingApproval,
            StatusArg::Queued => ResourceStatus::Queued,
            StatusArg::Applying => ResourceStatus::Applying,
            StatusArg::Provisioned => ResourceStatus::Provisioned,
            StatusArg::Failed => ResourceStatus::Failed,
            StatusArg::Refused => ResourceStatus::Refused,
            StatusArg::Deleting => ResourceStatus::Deleting,
            StatusArg::Deleted => ResourceStatus::Deleted,
            StatusArg::Abandoned => ResourceStatus::Abandoned,
        }
    }
}

/// `ADDRESS=ID`, split at the first `=` (an id may hold more).
fn parse_import(text: &str) -> Result<heimdall_wire::ImportTarget, String> {
    match text.split_once('=') {
        Some((address, id)) if !address.is_empty() && !id.is_empty() => {
            Ok(heimdall_wire::ImportTarget { address: address.to_owned(), id: id.to_owned() })
        }
        _ => Err("expected ADDRESS=ID, e.g. aws_s3_bucket.this=acme-logs".into()),
    }
}
