//! `heimdall-terraform-guard TERRAFORM ARGS…`: runs Terraform for the
//! Agent and stops it, and all it started, when the Agent goes
//! (`heimdall_agent::jobs::terraform_guard`). A binary of its own so that it
//! starts in a fraction of the time the Agent's binary takes: the Agent
//! starts one for every Terraform command of every job.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    heimdall_agent::jobs::terraform_guard::guard_main(std::env::args_os().skip(1).collect())
}
