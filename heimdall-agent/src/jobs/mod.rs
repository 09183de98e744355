//! Running jobs: the workers that claim jobs over the channel and keep
//! their leases ([`worker`]), the pinned Terraform they run from allowed
//! modules only ([`terraform`], with [`terraform_guard`] so no run outlives
//! its Agent), the credentials a job gets ([`job_credentials`]) and the
//! plans kept for approval through Terraform's own backend ([`plan_files`]),
//! and the jobs it completed, never run twice ([`completed`]).

pub mod completed;
pub mod job_credentials;
pub mod plan_files;
pub mod terraform;
pub mod terraform_guard;
pub mod worker;
