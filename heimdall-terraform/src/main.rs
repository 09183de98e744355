//! `terraform-provider-heimdall`: started by Terraform or OpenTofu, never
//! by hand. It serves the plugin protocol (`tf_provider::serve`) on the
//! resources of [`provider::Heimdall`].

mod api;
mod catalog;
mod data;
mod policy;
mod provider;
mod secret;

use std::process::ExitCode;

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    match tf_provider::serve("heimdall", provider::Heimdall::default()).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("terraform-provider-heimdall: {error}");
            ExitCode::FAILURE
        }
    }
}
