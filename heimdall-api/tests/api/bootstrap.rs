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

/// `--if-absent`, for a script that bootstraps on every start (`heimdall
/// dev` does): the first run creates, later runs keep the token file that
/// opens this database, and a file from another database, or a database
/// whose token file is gone, is refused with what happened.
#[tokio::test]
async fn if_absent_keeps_a_token_file_that_opens_this_database_and_refuses_any_other() {
    let dir = tempfile::tempdir().unwrap();
    let (url, other_url) = (
        format!("sqlite://{}", dir.path().join("heimdall.db").display()),
        format!("sqlite://{}", dir.path().join("other.db").display()),
    );
    let token_file = dir.path().join("owner.token");
    let file = token_file.to_str().unwrap();
    let args = ["--token-file", file, "--if-absent", "--output", "json"];

    let first = bootstrap(&url, &args).await;
    assert!(first.status.success(), "{}", String::from_utf8_lossy(&first.stderr));
    let first: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(first["created"], true);
    let token = std::fs::read_to_string(&token_file).unwrap();

    let again = bootstrap(&url, &args).await;
    assert!(again.status.success(), "{}", String::from_utf8_lossy(&again.stderr));
    let again: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(again["created"], false);
    assert_eq!(again["organization"]["id"], first["organization"]["id"]);
    assert_eq!(std::fs::read_to_string(&token_file).unwrap(), token, "the file is kept as it was");

    // The same file against a database it does not open.
    let elsewhere = bootstrap(&other_url, &args).await;
    assert!(!elsewhere.status.success());
    let stderr = String::from_utf8_lossy(&elsewhere.stderr);
    assert!(stderr.contains("UNAUTHENTICATED") && stderr.contains("another database"), "{stderr}");
    assert!(!stderr.contains(token.trim()), "the token is never printed: {stderr}");

    // The token file gone, the database bootstrapped: the token is lost, and it says where it looked.
    std::fs::remove_file(&token_file).unwrap();
    let lost = bootstrap(&url, &args).await;
    let stderr = String::from_utf8_lossy(&lost.stderr);
    assert!(!lost.status.success());
    assert!(stderr.contains("ALREADY_BOOTSTRAPPED") && stderr.contains("owner.token"), "{stderr}");
    assert!(!token_file.exists(), "no empty token file is left behind");
}
