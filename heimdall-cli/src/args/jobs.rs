//! `heimdall job`.

use clap::Subcommand;
use heimdall_core::ids::JobId;

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// List jobs, oldest first; with more than one Resource's, a RESOURCE column
    List {
        /// Only jobs of this component's Resources (id or name)
        #[arg(long)]
        component: Option<String>,
        /// Only this Resource's jobs (id or name)
        #[arg(long)]
        resource: Option<String>,
        /// The newest first
        #[arg(long)]
        newest_first: bool,
        #[command(flatten)]
        page: super::PageArgs,
    },
    /// Show one job
    Show {
        /// The job id
        job: JobId,
    },
    /// Print a job's Terraform output
    Log {
        /// The job id
        job: JobId,
        /// Keep printing as the Agent reports more, until the job ends; exits 0 if it completed,
        /// 1 if it failed or was cancelled
        #[arg(long, short = 'f')]
        follow: bool,
    },
}
