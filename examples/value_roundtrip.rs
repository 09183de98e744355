//! A program that embeds the SDK writes a value and reads it back, with no
//! CLI and no copied client code: a key is made here and certified for the
//! token's person ([`flows::login`]), the value goes to every Agent holding
//! the environment ([`flows::write_value`]) and is read from the first one
//! that answers ([`flows::read_values`]). The value never reaches the API
//! and is never printed.
//!
//! ```sh
//! export HEIMDALL_API_URL=https://127.0.0.1:7480 HEIMDALL_TOKEN=hmd_… HEIMDALL_CA_FILE=ca.pem
//! printf 'hunter2' | cargo run -p heimdall-examples --example value_roundtrip -- db-password dev
//! ```

use std::io::Read as _;

use heimdall_sdk::flows::{self, AgentOptions, Ask};
use heimdall_sdk::wire::CreateSecret;
use heimdall_sdk::{Client, ErrorCode};
use zeroize::Zeroizing;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // Errors as the CLI prints them: `error: CODE: message`.
    if let Err(err) = roundtrip().await {
        eprintln!("error: {err}");
        std::process::exit(1);
    }
}

async fn roundtrip() -> Result<(), Box<dyn std::error::Error>> {
    let url = std::env::var("HEIMDALL_API_URL").unwrap_or_else(|_| "https://127.0.0.1:7480".into());
    let token =
        std::env::var("HEIMDALL_TOKEN").map_err(|_| "set HEIMDALL_TOKEN (see `heimdall token create`)")?;
    let ca_file =
        std::env::var("HEIMDALL_CA_FILE").map_err(|_| "set HEIMDALL_CA_FILE to the installation CA")?;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [secret, environment] = args.as_slice() else {
        return Err("usage: value_roundtrip SECRET ENVIRONMENT  (the value on standard input)".into());
    };
    let mut value = Zeroizing::new(String::new());
    std::io::stdin().read_to_string(&mut value)?;
    if value.is_empty() {
        return Err("the value comes on standard input, and it is empty".into());
    }

    let api = Client::with_ca(&url, Some(&token), &std::fs::read_to_string(&ca_file)?)?;
    let me = flows::login(&api, None).await?;
    println!("certified a new key for {} ({})", api.whoami().await?.member.email, me.issued.sha256);

    let request = CreateSecret { name: secret.clone(), ..Default::default() };
    match api.create_secret(&request).await {
        Ok(_) => println!("created secret {secret}"),
        Err(err) if err.code() == Some(ErrorCode::AlreadyExists) => println!("secret {secret} exists"),
        Err(err) => return Err(err.into()),
    }

    let stored =
        flows::write_value(&api, &me.identity, (secret, environment), &value, None, AgentOptions::default())
            .await?;
    for (agent, why) in &stored.failed {
        eprintln!("agent {agent} did not store version {}: {why}", stored.version);
    }
    if stored.stored_on.is_empty() {
        return Err(format!("no Agent stored version {}", stored.version).into());
    }
    println!("stored version {} on {}", stored.version, stored.stored_on.join(", "));

    let read = flows::read_values(
        &api,
        &me.identity,
        environment,
        Ask::One { secret, version: None },
        AgentOptions::default(),
    )
    .await?;
    let [answer] = read.answers.as_slice() else {
        return Err("the Agent answered with more than one value".into());
    };
    if answer.value.expose() != value.as_str() || answer.version != stored.version {
        return Err(
            format!("read back version {} from {}, and it differs", answer.version, read.agent).into()
        );
    }
    println!("read back version {} from {}: the same value", answer.version, read.agent);
    Ok(())
}
