//! `heimdall-api bootstrap --token-file`: the owner's token goes to a new
//! file readable by its owner only, never to standard output; a file that
//! is already there stops the bootstrap before anything is created.

use std::os::unix::fs::PermissionsExt;

async fn bootstrap(url: &str, extra: &[&str]) -> std::process::Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_heimdall-api"));
    command.args(["bootstrap", "--database-url", url, "--org", "acme", "--owner", "owner@example.com"]);
    command.args(extra).output().await.unwrap()
}

#[tokio::test]
async fn the_owners_token_goes_to_a_new_private_file_and_nowhere_else() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("heimdall.db").display());
    let token_file = dir.path().join("owner.token");
    let (file, other) = (token_file.to_str().unwrap(), dir.path().join("again.token"));

    // A file already there: refused, and the database stays empty.
    std::fs::write(&token_file, "keep me\n").unwrap();
    let refused = bootstrap(&url, &["--token-file", file]).await;
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("INVALID_INPUT") && stderr.contains("owner.token"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&token_file).unwrap(), "keep me\n", "never overwritten");
    std::fs::remove_file(&token_file).unwrap();

    let done = bootstrap(&url, &["--token-file", file, "--output", "json"]).await;
    assert!(done.status.success(), "the refusal created nothing: {}", String::from_utf8_lossy(&done.stderr));
    let token = std::fs::read_to_string(&token_file).unwrap();
    let token = token.strip_suffix('\n').unwrap();
    assert!(token.starts_with("hmd_") && token.len() > 20, "{token}");
    assert_eq!(std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777, 0o600);
    let printed: serde_json::Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(printed["token_file"], file);
    assert_eq!(printed["owner"]["email"], "owner@example.com");
    assert!(printed.get("token").is_none() && !String::from_utf8_lossy(&done.stdout).contains(token));

    // Once per database: a second bootstrap removes the file it made.
    let again = bootstrap(&url, &["--token-file", other.to_str().unwrap()]).await;
    assert!(String::from_utf8_lossy(&again.stderr).contains("ALREADY_BOOTSTRAPPED"));
    assert!(!other.exists(), "no empty token file is left behind");
}
