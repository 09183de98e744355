//! `heimdall login`, profiles and `logout`, over HTTP and HTTPS.

use std::os::unix::fs::PermissionsExt;

use heimdall_api::testing::TestApi;

use crate::support::{Heimdall, Run, Transcript};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_profiles_and_logout() {
    let api = TestApi::sqlite().await;
    let tmp = tempfile::tempdir().expect("temp dir");
    let config_dir = tmp.path().join("config");
    let plain = Heimdall { url: None, token: None, config_dir: config_dir.clone() };
    let mut t = Transcript::default();

    // Never on the command line: a token there shows in `ps` and shell history.
    let run = plain.run(&["--api-url", api.url.as_str(), "login", "--token", api.owner_token.as_str()]).await;
    assert_eq!(run.code, 2, "{run:?}");
    assert!(!run.stderr.contains(&api.owner_token), "{run:?}");

    // The token from HEIMDALL_TOKEN, into the default profile.
    let login = ["--api-url", api.url.as_str(), "login"];
    let login_with_env = || async {
        let mut cmd = plain.command(&login);
        cmd.env("HEIMDALL_TOKEN", &api.owner_token);
        let output = cmd.output().await.expect("run");
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8(output.stdout).expect("utf-8"),
            stderr: String::from_utf8(output.stderr).expect("utf-8"),
        }
    };
    let run = login_with_env().await;
    t.record(&["--api-url", "URL", "login", "(HEIMDALL_TOKEN=TOKEN)"], &run);
    let config_file = config_dir.join("config.toml");
    let mode = std::fs::metadata(&config_file).expect("config written").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "config.toml is private");
    let text = std::fs::read_to_string(&config_file).expect("read config");
    assert!(text.contains("current_profile = \"default\""), "{text}");
    assert!(text.contains(&api.owner_token), "the token is stored for later runs");
    // The client certificate: a key made here (0600), its certificate, the CA.
    let certs = config_dir.join("profiles/default");
    let key = std::fs::read_to_string(certs.join("client.key")).expect("client.key written");
    assert!(key.starts_with("-----BEGIN PRIVATE KEY-----"), "a PEM key");
    let mode = |name: &str| std::fs::metadata(certs.join(name)).expect(name).permissions().mode() & 0o777;
    assert_eq!(mode("client.key"), 0o600, "the key is private");
    let cert = std::fs::read_to_string(certs.join("client.pem")).expect("client.pem written");
    assert!(cert.starts_with("-----BEGIN CERTIFICATE-----"), "{cert}");
    assert!(std::fs::read_to_string(certs.join("ca.pem")).expect("ca.pem").contains("BEGIN CERTIFICATE"));
    assert!(
        std::fs::read_dir(&certs).expect("dir").all(|e| !e
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .ends_with(".tmp")),
        "no temporary file is left behind"
    );
    let key_body: String = key.lines().filter(|l| !l.starts_with("-----")).collect();
    assert!(run.stdout.contains("✓ Client certificate issued (valid until "), "{run:?}");
    assert!(!run.stdout.contains("PRIVATE KEY") && !run.stderr.contains("PRIVATE KEY"), "{run:?}");

    // The stored profile is enough: no environment.
    t.run(&plain, &["whoami"]).await;

    // A member's token, read from stdin, into a second profile that becomes current.
    let added = plain.run(&["member", "add", "ana@example.com", "--role", "admin", "--output", "json"]).await;
    let ana_token = serde_json::from_str::<serde_json::Value>(&added.stdout).expect("json")["token"]
        .as_str()
        .expect("token")
        .to_owned();
    let args = ["--api-url", api.url.as_str(), "--profile", "ana", "login"];
    let run = plain.run_with_stdin(&args, Some(&format!("{ana_token}\n"))).await;
    t.record(&["--api-url", "URL", "--profile", "ana", "login", "<", "token"], &run);
    t.run(&plain, &["whoami"]).await;
    t.run(&plain, &["profile", "list"]).await;
    t.run(&plain, &["--profile", "default", "whoami"]).await;
    t.run(&plain, &["profile", "list", "--output", "json"]).await;

    // HEIMDALL_PROFILE picks a profile too; an unknown one is a clear error.
    let mut cmd = plain.command(&["whoami"]);
    cmd.env("HEIMDALL_PROFILE", "nope");
    let output = cmd.output().await.expect("run");
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no profile named \"nope\""));

    // Logging in again renews the certificate for the same key (personal
    // secrets are bound to it); --new-key makes a new one.
    let run = login_with_env().await;
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(certs.join("client.key")).expect("client.key"),
        key,
        "the key is kept"
    );
    let renewed_cert = std::fs::read_to_string(certs.join("client.pem")).expect("client.pem");
    assert_ne!(renewed_cert, cert, "a new certificate");
    let mut cmd = plain.command(&["--api-url", api.url.as_str(), "login", "--new-key"]);
    cmd.env("HEIMDALL_TOKEN", &api.owner_token);
    let rekeyed = cmd.output().await.expect("run");
    assert!(rekeyed.status.success(), "{rekeyed:?}");
    let renewed_key = std::fs::read_to_string(certs.join("client.key")).expect("client.key");
    assert_ne!(renewed_key, key, "a new key");
    assert_eq!(mode("client.key"), 0o600);
    for key in [&key_body, &renewed_key.lines().filter(|l| !l.starts_with("-----")).collect::<String>()] {
        let (out, err) = (String::from_utf8_lossy(&rekeyed.stdout), String::from_utf8_lossy(&rekeyed.stderr));
        assert!(!out.contains(key.as_str()) && !err.contains(key.as_str()), "key printed");
    }
    let ana_login = ["--profile", "ana", "login", "--api-url", api.url.as_str()];
    let run = plain.run_with_stdin(&ana_login, Some(&ana_token)).await;
    assert_eq!(run.code, 0, "{run:?}");

    // --no-certificate: a profile without one, which cannot reach Agents.
    let args = ["--api-url", api.url.as_str(), "--profile", "bare", "login", "--no-certificate"];
    let run = plain.run_with_stdin(&args, Some(&ana_token)).await;
    t.record(&["--api-url", "URL", "--profile", "bare", "login", "--no-certificate", "<", "token"], &run);
    assert!(!config_dir.join("profiles/bare").exists(), "no certificate without asking");
    let get = t.run(&plain, &["secret", "get", "db-password", "--environment", "dev"]).await;
    assert_eq!(get.code, 3, "{get:?}");
    assert!(get.stderr.contains("no client certificate for this profile: run `heimdall login`"), "{get:?}");
    t.run(&plain, &["logout"]).await;
    let run = plain.run_with_stdin(&ana_login, Some(&ana_token)).await;
    assert_eq!(run.code, 0, "{run:?}");
    assert!(config_dir.join("profiles/ana/client.key").exists());

    // A wrong token is refused and not stored.
    let run = plain
        .run_with_stdin(&["--api-url", api.url.as_str(), "--profile", "bad", "login"], Some("hmd_nope"))
        .await;
    t.record(&["--api-url", "URL", "--profile", "bad", "login", "<", "WRONG"], &run);
    t.run(&plain, &["logout"]).await;
    t.run(&plain, &["profile", "list"]).await;
    t.run(&plain, &["whoami"]).await;
    t.run(&plain, &["--profile", "default", "logout"]).await;
    assert!(!certs.join("client.key").exists(), "logout forgets the profile's key");
    assert!(!config_dir.join("profiles/ana/client.key").exists(), "logout forgets the profile's key");
    t.run(&plain, &["logout"]).await;

    for token in [&api.owner_token, &ana_token] {
        assert!(!t.0.contains(token.as_str()), "a token leaked into output");
    }
    crate::snapshot("login", &t.0, &[(&config_dir.display().to_string(), "[CONFIG_DIR]")]);
}

/// Against an API serving HTTPS with a certificate from its installation
/// CA: logging in trusts that CA only when told so (a file, or its
/// fingerprint), keeps it in the profile, and checks the server is the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_over_https_trusts_only_the_installation_ca_it_was_given() {
    let api = TestApi::https(heimdall_api::testing::TestDatabase::sqlite().await).await;
    assert!(api.url.starts_with("https://"));
    let fingerprint = heimdall_api::pki::Ca::load_or_create(&api.ca_dir).expect("the CA").fingerprint();
    let tmp = tempfile::tempdir().expect("temp dir");
    let h = Heimdall { url: None, token: None, config_dir: tmp.path().join("config") };
    fn with<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
        [&["--api-url", url, "login"][..], extra].concat()
    }
    let login = |extra: &[&'static str]| with(api.url.as_str(), extra);
    // The system's roots do not know this CA.
    let run = h.run_with_stdin(&login(&[]), Some(&api.owner_token)).await;
    assert_ne!(run.code, 0, "{run:?}");
    // Another fingerprint: refused before the token is sent.
    let other = "ab".repeat(32);
    let run = h.run_with_stdin(&with(&api.url, &["--ca-sha256", &other]), Some(&api.owner_token)).await;
    assert_ne!(run.code, 0, "{run:?}");
    assert!(!tmp.path().join("config/config.toml").exists(), "nothing saved");
    // Its fingerprint: the CA is fetched, checked and kept with the profile.
    let run = h
        .run_with_stdin(&with(&api.url, &["--ca-sha256", fingerprint.as_str()]), Some(&api.owner_token))
        .await;
    assert_eq!(run.code, 0, "{run:?}");
    let text = std::fs::read_to_string(tmp.path().join("config/config.toml")).expect("config");
    assert!(text.contains("BEGIN CERTIFICATE"), "the CA is kept in the profile: {text}");
    let whoami = h.run(&["whoami"]).await;
    assert_eq!(whoami.code, 0, "{whoami:?}");
    // A new member is told the command that works here, pin included.
    let added = h.run(&["member", "add", "bo@example.com", "--role", "member"]).await;
    assert_eq!(added.code, 0, "{added:?}");
    let told = format!("heimdall login --api-url {} --ca-sha256 {fingerprint}", api.url);
    assert!(added.stderr.contains(&told), "{added:?}");
    // Or the CA file itself.
    let ca_file = api.ca_dir.join("ca.pem");
    let run = h
        .run_with_stdin(
            &with(&api.url, &["--profile", "file", "--ca-file", ca_file.to_str().expect("path")]),
            Some(&api.owner_token),
        )
        .await;
    assert_eq!(run.code, 0, "{run:?}");
}
