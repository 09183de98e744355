//! `heimdall job`.

use clap::Subcommand;
use heimdall_core::ids::JobId;

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// List jobs, oldest first
    List {
        /// Only jobs of this component's Resources (id or name)
        #[arg(long)]
        component: Option<String>,
        /// Only this Resource's jobs (id or name)
        #[arg(long)]
        resource: Option<String>,
    },
    /// Show one job
    Show { job: JobId },
    /// Print a job's Terraform output
    Log { job: JobId },
}
