//! `heimdall-api bootstrap`: the first organization and its owner.

use heimdall_core::{ApiError, ErrorCode};

use super::{config, internal, open, print_json, BootstrapArgs, Output};
use crate::SystemClock;

pub(super) async fn bootstrap(args: BootstrapArgs) -> Result<(), ApiError> {
    let BootstrapArgs { database_url, config: file, org, owner, token_file, if_absent, output } = args;
    let config = config(database_url, None, file)?;
    let store = open(&config).await?;
    if let Some(path) = token_file.as_deref().filter(|path| if_absent && path.exists()) {
        let kept = crate::bootstrap::kept_token(&store, path).await;
        store.close().await;
        let (owner, org) = kept?;
        return match output {
            Output::Json => print_json(&serde_json::json!({
                "organization": org, "owner": owner, "token_file": path, "created": false,
            })),
            Output::Table => {
                println!("✓ Already bootstrapped: organization {}, owner {}", org.name, owner.email);
                println!("✓ Owner API token in {}", path.display());
                Ok(())
            }
        };
    }
    let token_out = token_file.as_deref().map(crate::bootstrap::TokenFile::create).transpose();
    let token_out = token_out?;
    let done = crate::bootstrap::bootstrap(&store, &SystemClock, &org, &owner).await;
    store.close().await;
    let done = done.map_err(|e| match (&token_out, e.code) {
        (Some(out), ErrorCode::AlreadyBootstrapped) => ApiError::new(
            e.code,
            format!("{}; its owner's token is not in {}", e.message, out.path.display()),
        ),
        _ => e,
    })?;
    let written = token_out.map(|out| out.write(&done.token)).transpose().map_err(internal)?;
    let (org, owner) = (&done.organization, &done.owner);
    match (output, written) {
        (Output::Json, None) => print_json(&done)?,
        (Output::Json, Some(path)) => print_json(&serde_json::json!({
            "organization": org, "owner": owner, "token_file": path, "created": true,
        }))?,
        (Output::Table, written) => {
            println!("✓ Organization created: {} ({})", org.name, org.id);
            println!("✓ Owner: {}", owner.email);
            match written {
                Some(path) => println!("✓ Owner API token written to {} (mode 0600)", path.display()),
                None => println!("\nOwner API token (shown once, store it now):\n  {}\n", done.token),
            }
            println!(
                "Next: heimdall login --api-url https://{} (the token on standard input)",
                config.listen
            );
        }
    }
    Ok(())
}
