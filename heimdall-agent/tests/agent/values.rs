//! Secret values end to end: the API on PostgreSQL, a real `heimdall-agent`
//! holding the environment on each value store, people with client
//! certificates from the API, and the SDK's `AgentClient` writing with
//! the API's grants and reading over the Agent's local HTTPS API.

use std::path::{Path, PathBuf};
use std::time::Duration;

use heimdall_sdk::{AgentClient, ErrorCode, Identity};
use reqwest::Method;
use serde_json::{json, Value};

use crate::support::{agent_client, World};

/// Where the Agent under test keeps values.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Store {
    Sqlite,
    Postgres,
    /// moto's DynamoDB (its at-rest bytes are checked by the store scenario).
    Dynamo,
}

/// A fresh PostgreSQL database owned by a fresh login role, as an operator
/// would give an Agent; returns (role, database, url for the Agent).
pub(crate) async fn agent_database() -> (String, String, String) {
    sqlx::any::install_default_drivers();
    let admin_url = heimdall_api::testing::postgres_admin_url();
    let admin = sqlx::AnyPool::connect(&admin_url).await.unwrap();
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let (role, db) =
        (format!("heimdall_agent_{}", &suffix[..12]), format!("heimdall_agent_values_{}", &suffix[..12]));
    sqlx::query(&format!("CREATE ROLE {role} LOGIN")).execute(&admin).await.unwrap();
    sqlx::query(&format!("CREATE DATABASE {db} OWNER {role}")).execute(&admin).await.unwrap();
    admin.close().await;
    let (base, _) = admin_url.rsplit_once('/').unwrap();
    let host = base.rsplit_once('@').map_or(base.trim_start_matches("postgres://"), |(_, h)| h);
    (role.clone(), db.clone(), format!("postgres://{role}@{host}/{db}"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Adds `[values]` and `[local_api]` to an enrolled Agent's config; returns
/// the local API URL and the SQLite file (if any).
pub(crate) fn configure(
    config: &Path,
    store: Store,
    postgres_url: Option<&str>,
) -> (String, Option<PathBuf>) {
    configure_syncing_every(config, store, postgres_url, 1)
}

pub(crate) fn configure_syncing_every(
    config: &Path,
    store: Store,
    postgres_url: Option<&str>,
    sync_seconds: u64,
) -> (String, Option<PathBuf>) {
    let key_file = config.with_file_name("master.key");
    std::fs::write(&key_file, "5e".repeat(32)).unwrap();
    let port = free_port();
    let sqlite = config.with_file_name("values.db");
    let store_line = match store {
        Store::Sqlite => format!("sqlite_path = {:?}", sqlite.display().to_string()),
        Store::Postgres => format!("postgres_url = {:?}", postgres_url.unwrap()),
        Store::Dynamo => format!(
            "dynamodb_table = \"heimdall-values-{}\"\naws_region = \"us-east-1\"\naws_endpoint_url = {:?}",
            &uuid::Uuid::new_v4().simple().to_string()[..12],
            crate::support::moto_start()
        ),
    };
    let text = std::fs::read_to_string(config).unwrap();
    std::fs::write(
        config,
        format!(
            "{text}\n[values]\n{store_line}\nmaster_key_file = {:?}\nsync_seconds = {sync_seconds}\n\n[local_api]\nlisten = \"127.0.0.1:{port}\"\n",
            key_file.display().to_string()
        ),
    )
    .unwrap();
    (format!("https://localhost:{port}"), matches!(store, Store::Sqlite).then_some(sqlite))
}

/// A fresh key and a certificate signing request for it (PEM).
fn key_and_csr() -> (rcgen::KeyPair, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let csr = rcgen::CertificateParams::new(Vec::<String>::new())
        .and_then(|p| p.serialize_request(&key))
        .and_then(|r| r.pem())
        .unwrap();
    (key, csr)
}

/// A person's key, made here, and the certificate the API issues for it.
pub(crate) async fn identity(w: &World, token: &str) -> Identity {
    let (key, csr) = key_and_csr();
    let issued = w.post(token, "/v1/me/certificate", json!({ "csr": csr })).await;
    Identity {
        certificate_pem: issued["certificate"].as_str().unwrap().to_owned(),
        key_pem: key.serialize_pem().into(),
        ca_pem: issued["ca"].as_str().unwrap().to_owned(),
    }
}

/// A certificate for bo signed directly by `ca`, not issued (nor recorded)
/// by the API.
fn signed_by(ca: &heimdall_api::pki::Ca, member: heimdall_core::ids::MemberId, trust: &str) -> Identity {
    let (key, csr) = key_and_csr();
    let cert = ca.issue_member_cert(&csr, member, "bo@example.com", time::OffsetDateTime::now_utc()).unwrap();
    Identity { certificate_pem: cert.pem, key_pem: key.serialize_pem().into(), ca_pem: trust.to_owned() }
}

/// Waits until `check` holds, polling; after 30 s panics with `what` and
/// the Agent's log (next to its `config`).
/// An Agent that holds `dev`, keeps values (SQLite) and runs with `env`,
/// and `secret` set to `value` by the owner through it: what a job that
/// reads a secret needs.
pub(crate) struct HoldingAgent {
    pub process: tokio::process::Child,
    pub local_url: String,
    pub owner: Identity,
}

pub(crate) async fn holding_secret(
    w: &World,
    config: &Path,
    secret: &str,
    value: &str,
    env: &[(&str, &str)],
) -> HoldingAgent {
    let owner = w.api.owner_token.clone();
    let (local_url, _) = configure(config, Store::Sqlite, None);
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": config_agent_name(config) })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": secret })).await;
    let process = w.run_agent_with(config, env);
    eventually(config, "the Agent's local URL", || async {
        let path = format!("/v1/secrets/{secret}/holders?environment=dev");
        let (_, holders) = w.call(reqwest::Method::GET, &path, None).await;
        holders[0]["url"].as_str() == Some(local_url.as_str())
    })
    .await;
    let who = identity(w, &owner).await;
    assert_eq!(set(w, &owner, &who, secret, "dev", value).await, 1);
    HoldingAgent { process, local_url, owner: who }
}

/// The Agent's name: its data directory's, as `World::enroll` makes it.
fn config_agent_name(config: &Path) -> String {
    config.parent().and_then(|d| d.file_name()).unwrap().to_string_lossy().into_owned()
}

pub(crate) async fn eventually<F, Fut>(config: &Path, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !check().await {
        let log = || std::fs::read_to_string(config.with_extension("log")).unwrap_or_default();
        assert!(std::time::Instant::now() < deadline, "timed out waiting for {what}; agent log:\n{}", log());
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until the API lists `holders` local URLs for `secret` in dev: every
/// holder has reported where programs reach it.
pub(crate) async fn holders_reachable(w: &World, config: &Path, secret: &str, holders: usize) {
    let path = format!("/v1/secrets/{secret}/holders?environment=dev");
    eventually(config, "every holder's local URL", || async {
        let (_, listed) = w.call(Method::GET, &path, None).await;
        listed.as_array().unwrap().iter().filter(|h| h["url"].is_string()).count() == holders
    })
    .await;
}

/// Writes `value` as the next version in `env` through the API's grant.
pub(crate) async fn set(w: &World, token: &str, who: &Identity, secret: &str, env: &str, value: &str) -> i64 {
    write(w, token, who, (secret, env, value), None, None).await
}

/// [`set`], keeping the version it replaces readable for `keep` (`1h`).
pub(crate) async fn set_keeping(
    w: &World,
    token: &str,
    who: &Identity,
    (secret, env, value): (&str, &str, &str),
    keep: &str,
) -> i64 {
    write(w, token, who, (secret, env, value), None, Some(keep)).await
}

/// Writes `value` as the next version in `env` on the holder named `agent`
/// only, as a write made while the other holders were down.
pub(crate) async fn set_only_on(
    w: &World,
    token: &str,
    who: &Identity,
    (secret, env, value): (&str, &str, &str),
    agent: &str,
) -> i64 {
    write(w, token, who, (secret, env, value), Some(agent), None).await
}

/// [`set_only_on`], keeping the version it replaces readable for `keep`.
pub(crate) async fn set_only_on_keeping(
    w: &World,
    token: &str,
    who: &Identity,
    (secret, env, value): (&str, &str, &str),
    (agent, keep): (&str, &str),
) -> i64 {
    write(w, token, who, (secret, env, value), Some(agent), Some(keep)).await
}

async fn write(
    w: &World,
    token: &str,
    who: &Identity,
    (secret, env, value): (&str, &str, &str),
    only: Option<&str>,
    keep: Option<&str>,
) -> i64 {
    let mut body = json!({ "environment": env });
    if let Some(keep) = keep {
        body["keep_previous"] = json!(keep);
    }
    let created = w.post(token, &format!("/v1/secrets/{secret}/versions"), body).await;
    let version = created["version"].as_i64().unwrap();
    let holders = created["holders"].as_array().unwrap();
    for holder in holders.iter().filter(|h| only.is_none_or(|name| h["agent"] == name)) {
        let id: heimdall_core::ids::AgentId = holder["agent_id"].as_str().unwrap().parse().unwrap();
        let pins: Option<Vec<heimdall_core::Sha256Hex>> =
            serde_json::from_value(holder["certificates"].clone()).unwrap();
        let agent = AgentClient::new(holder["url"].as_str().unwrap(), who, id, pins.as_deref()).unwrap();
        agent.put_value(secret, env, version, holder["grant"].as_str().unwrap(), value).await.unwrap();
    }
    version
}

pub(crate) fn code(err: &heimdall_sdk::Error) -> Option<ErrorCode> {
    err.code()
}

async fn scenario(store: Store) {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let pg = match store {
        Store::Postgres => Some(agent_database().await),
        Store::Sqlite | Store::Dynamo => None,
    };
    let (local_url, sqlite_file) = configure(&config, store, pg.as_ref().map(|(_, _, url)| url.as_str()));
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "agent-1" })).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "db-password" })).await;
    let bo = w.post(&owner, "/v1/members", json!({ "email": "bo@example.com", "role": "member" })).await;
    let bo_token = bo["token"].as_str().unwrap().to_owned();
    let ana = identity(&w, &owner).await;
    let bo_id = identity(&w, &bo_token).await;

    let mut agent = w.run_agent(&config);
    // The Agent reports its local API on its first sync.
    eventually(&config, "the Agent's local URL", || async {
        let (_, holders) = w.call(Method::GET, "/v1/secrets/db-password/holders?environment=dev", None).await;
        holders[0]["url"].as_str() == Some(local_url.as_str())
    })
    .await;
    let ana_agent = agent_client(&config, &local_url, &ana);
    let bo_agent = agent_client(&config, &local_url, &bo_id);

    // Write, then read it back, as the owner and as a member.
    let marker = format!("marker-{}", uuid::Uuid::new_v4().simple());
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", &marker).await, 1);
    let read = ana_agent.get_value("db-password", "dev", None).await.unwrap();
    assert_eq!((read.value.expose().as_str(), read.version), (marker.as_str(), 1));
    assert!(!format!("{read:?}").contains(&marker), "Debug shows the value");
    assert_eq!(bo_agent.get_value("db-password", "dev", Some(1)).await.unwrap().value.expose(), &marker);

    // A grant is for one version on one Agent, issued to one person, once.
    // (Version 1 stays readable for an hour after it: read below.)
    let created = w
        .post(
            &owner,
            "/v1/secrets/db-password/versions",
            json!({ "environment": "dev", "keep_previous": "1h" }),
        )
        .await;
    let grant = created["holders"][0]["grant"].as_str().unwrap().to_owned();
    let refused = ana_agent.put_value("db-password", "dev", 3, &grant, "x").await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::GrantInvalid), "{refused}");
    let refused = bo_agent.put_value("db-password", "dev", 2, &grant, "x").await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::GrantInvalid), "{refused}");
    let mut forged = grant.clone();
    forged.replace_range(10..12, if &forged[10..12] == "AA" { "BB" } else { "AA" });
    let refused = ana_agent.put_value("db-password", "dev", 2, &forged, "x").await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::GrantInvalid), "{refused}");
    let second = format!("{marker}-v2");
    ana_agent.put_value("db-password", "dev", 2, &grant, &second).await.unwrap();
    let again = ana_agent.put_value("db-password", "dev", 2, &grant, "overwrite").await.unwrap_err();
    assert_eq!(code(&again), Some(ErrorCode::AlreadyExists), "{again}");
    assert_eq!(ana_agent.get_value("db-password", "dev", None).await.unwrap().value.expose(), &second);

    // A forbid on the environment refuses the member, with no value.
    let no_dev_for_bo = w.post(
        &owner,
        "/v1/policies",
        json!({ "name": "no-dev-reads-for-bo", "text": "forbid (principal == Heimdall::Member::\"bo@example.com\", action == Heimdall::Action::\"secret.read\", resource) when { context.environment == \"dev\" };" }),
    )
    .await;
    // Reads served so far: three above, plus any bo makes before the policy arrives.
    let served = std::sync::atomic::AtomicU64::new(3);
    eventually(&config, "the policy to reach the Agent", || async {
        match bo_agent.get_value("db-password", "dev", None).await {
            Ok(_) => {
                served.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                false
            }
            Err(e) => e.code() == Some(ErrorCode::Forbidden),
        }
    })
    .await;
    let served = served.into_inner();

    // A certificate from the same CA that the API never recorded (signed
    // by someone holding the CA key, not issued through the API) opens
    // nothing; a certificate from another CA fails the handshake.
    let bo_member: heimdall_core::ids::MemberId = bo["member"]["id"].as_str().unwrap().parse().unwrap();
    let ca = heimdall_api::pki::Ca::load_or_create(&w.api.ca_dir).unwrap();
    let unrecorded = agent_client(&config, &local_url, &signed_by(&ca, bo_member, &ana.ca_pem));
    let refused = unrecorded.get_value("db-password", "dev", None).await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::Unauthenticated), "{refused}");
    let other_ca = heimdall_api::pki::Ca::generate().unwrap();
    let foreign = agent_client(&config, &local_url, &signed_by(&other_ca, bo_member, &ana.ca_pem));
    let refused = foreign.get_value("db-password", "dev", None).await.unwrap_err();
    assert!(matches!(refused, heimdall_sdk::Error::Transport(_)), "{refused}");

    // The reads reach the access log on a sync.
    // Every served read is in the log once; refused ones are not.
    eventually(&config, "the access log", || async {
        let (_, log) = w.call(Method::GET, "/v1/secrets/db-password/access-log?environment=dev", None).await;
        let reads: u64 = log.as_array().unwrap().iter().map(|r| r["reads"].as_u64().unwrap()).sum();
        reads == served
    })
    .await;
    let (_, log) = w.call(Method::GET, "/v1/secrets/db-password/access-log", None).await;
    let accessors: Vec<&str> =
        log.as_array().unwrap().iter().map(|r| r["accessor"].as_str().unwrap()).collect();
    assert!(accessors.contains(&"owner@example.com") && accessors.contains(&"bo@example.com"), "{log}");
    assert!(
        log.as_array().unwrap().iter().all(|r| r["served_by"] == "agent-1" && r["from"] == "127.0.0.1"),
        "{log}"
    );

    // A leak: deactivating version 2 makes the Agent answer 410 for it after
    // its next sync, with no fallback to version 1.
    w.post(&owner, "/v1/secrets/db-password/deactivate", json!({ "environment": "dev", "version": 2 })).await;
    eventually(&config, "the tombstone", || async {
        ana_agent.get_value("db-password", "dev", None).await.err().and_then(|e| e.code())
            == Some(ErrorCode::VersionDeactivated)
    })
    .await;
    assert_eq!(ana_agent.get_value("db-password", "dev", Some(1)).await.unwrap().version, 1);
    let third = format!("{marker}-v3");
    assert_eq!(set(&w, &owner, &ana, "db-password", "dev", &third).await, 3);
    assert_eq!(ana_agent.get_value("db-password", "dev", None).await.unwrap().value.expose(), &third);

    // A personal secret: its owner writes and reads it; the org owner
    // cannot read it at the Agent either.
    let bo_cert = bo_id.certificate_sha256().unwrap();
    w.post(
        &bo_token,
        "/v1/secrets",
        json!({ "name": "bo-notes", "personal": true, "certificate_sha256": bo_cert }),
    )
    .await;
    assert_eq!(set(&w, &bo_token, &bo_id, "bo-notes", "dev", "personal-note").await, 1);
    // Personal restricts, it never bypasses: the forbid on bo in dev holds
    // for his own secret too, until it is deleted.
    eventually(&config, "the personal secret to reach the Agent", || async {
        bo_agent.get_value("bo-notes", "dev", None).await.err().and_then(|e| e.code())
            == Some(ErrorCode::Forbidden)
    })
    .await;
    // Changed in place to name prod instead: bo reads in dev again once the
    // Agent has synced the policy's next version.
    let policy = no_dev_for_bo["id"].as_str().unwrap();
    let prod_only = "forbid (principal == Heimdall::Member::\"bo@example.com\", action == Heimdall::Action::\"secret.read\", resource) when { context.environment == \"prod\" };";
    let (status, changed) =
        w.call(Method::PATCH, &format!("/v1/policies/{policy}"), Some(json!({ "text": prod_only }))).await;
    assert_eq!((status, changed["version"].as_i64()), (200, Some(2)), "{changed}");
    eventually(&config, "the policy's change to reach the Agent", || async {
        bo_agent.get_value("bo-notes", "dev", None).await.is_ok_and(|r| r.value.expose() == "personal-note")
    })
    .await;
    let (status, _) = w.call(Method::DELETE, &format!("/v1/policies/{policy}"), None).await;
    assert_eq!(status, 204);
    let refused = ana_agent.get_value("bo-notes", "dev", None).await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::NotFound), "{refused}");
    // A certificate minted with only bo's token (another key) opens nothing
    // bound to his key, neither to read nor to write.
    let minted = identity(&w, &bo_token).await;
    let minted_agent = agent_client(&config, &local_url, &minted);
    let refused = minted_agent.get_value("bo-notes", "dev", None).await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::NotFound), "{refused}");
    let created = w.post(&bo_token, "/v1/secrets/bo-notes/versions", json!({ "environment": "dev" })).await;
    let grant = created["holders"][0]["grant"].as_str().unwrap();
    let refused = minted_agent.put_value("bo-notes", "dev", 2, grant, "overwritten").await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::GrantInvalid), "{refused}");

    // A removed member's certificate stops working on the next sync.
    let (status, _) = w.call(Method::DELETE, "/v1/members/bo@example.com", None).await;
    assert_eq!(status, 200);
    eventually(&config, "the removal to reach the Agent", || async {
        bo_agent.get_value("bo-notes", "dev", None).await.err().and_then(|e| e.code())
            == Some(ErrorCode::Unauthenticated)
    })
    .await;
    // The reported attack: the owner adds bo's email again (as owner, even),
    // keeps the new member's first token and logs in with it. The new
    // member is not bo: the personal secret stays closed to her.
    let readded = w.post(&owner, "/v1/members", json!({ "email": "bo@example.com", "role": "owner" })).await;
    let impostor = identity(&w, readded["token"].as_str().unwrap()).await;
    let impostor_agent = agent_client(&config, &local_url, &impostor);
    eventually(&config, "the re-added member's certificate to reach the Agent", || async {
        impostor_agent.get_value("db-password", "dev", None).await.is_ok()
    })
    .await;
    let refused = impostor_agent.get_value("bo-notes", "dev", None).await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::NotFound), "{refused}");

    // The value is nowhere in the API's database: `pg_dump` of all of it
    // (schema and data), then every row read back as text.
    let dumped =
        std::process::Command::new("pg_dump").arg(w.api.database.url()).output().expect("pg_dump runs");
    assert!(dumped.status.success(), "pg_dump: {}", String::from_utf8_lossy(&dumped.stderr));
    let dumped = String::from_utf8_lossy(&dumped.stdout);
    assert!(dumped.contains("COPY public.secret_versions"), "the dump must hold the secrets' tables");
    assert!(dumped.contains("db-password"), "the dump must hold the secret's metadata");
    assert!(!dumped.contains(&marker), "a value reached the API's database");
    let api_rows = heimdall_api::testing::dump_rows(w.api.store.pool()).await;
    assert!(!api_rows.contains(&marker), "a value reached the API's database");
    // Nor in plaintext in the Agent's store.
    match (&sqlite_file, &pg) {
        (Some(file), _) => {
            let mut bytes = std::fs::read(file).unwrap();
            bytes.extend(std::fs::read(file.with_extension("db-wal")).unwrap_or_default());
            assert!(
                !bytes.windows(marker.len()).any(|win| win == marker.as_bytes()),
                "plaintext in the store"
            );
        }
        (None, Some((_, db, _))) => {
            let (base, _) = heimdall_api::testing::postgres_admin_url()
                .rsplit_once('/')
                .map(|(b, d)| (b.to_owned(), d.to_owned()))
                .unwrap();
            let pool = sqlx::AnyPool::connect(&format!("{base}/{db}")).await.unwrap();
            let rows = heimdall_api::testing::dump_rows(&pool).await;
            assert!(
                !rows.contains(&marker) && !rows.contains(&hex::encode(&marker)),
                "plaintext in the store"
            );
            pool.close().await;
        }
        (None, None) => {} // DynamoDB: see `store::scripted_scenario_on_dynamodb`.
    }

    // The Agent's database role loses INSERT: reads are refused, no value.
    if let Some((role, db, _)) = &pg {
        let (base, _) = heimdall_api::testing::postgres_admin_url()
            .rsplit_once('/')
            .map(|(b, d)| (b.to_owned(), d.to_owned()))
            .unwrap();
        let pool = sqlx::AnyPool::connect(&format!("{base}/{db}")).await.unwrap();
        sqlx::query(&format!("REVOKE INSERT ON access_records FROM {role}")).execute(&pool).await.unwrap();
        let resp = raw_get(&local_url, &ana, "/v1/secrets/db-password/value?environment=dev").await;
        assert_eq!(resp.0, 503, "{}", resp.1);
        assert!(resp.1.contains("AUDIT_UNAVAILABLE") && !resp.1.contains(&third), "{}", resp.1);
        sqlx::query(&format!("GRANT INSERT ON access_records TO {role}")).execute(&pool).await.unwrap();
        assert_eq!(ana_agent.get_value("db-password", "dev", None).await.unwrap().value.expose(), &third);

        // The store refuses a write: 503 UNAVAILABLE, and the database's
        // own error (table, role, privilege) stays in the Agent's log, as
        // the API keeps its own.
        sqlx::query(&format!("REVOKE INSERT ON secret_values FROM {role}")).execute(&pool).await.unwrap();
        let created =
            w.post(&owner, "/v1/secrets/db-password/versions", json!({ "environment": "dev" })).await;
        let holder = &created["holders"][0];
        let err = ana_agent
            .put_value(
                "db-password",
                "dev",
                created["version"].as_i64().unwrap(),
                holder["grant"].as_str().unwrap(),
                "x",
            )
            .await
            .unwrap_err();
        let refusal = err.api().cloned().unwrap();
        assert_eq!(refusal.code, ErrorCode::Unavailable, "{refusal:?}");
        for detail in ["permission denied", "secret_values", role.as_str()] {
            assert!(!refusal.message.contains(detail), "the answer shows {detail:?}: {}", refusal.message);
        }
        sqlx::query(&format!("GRANT INSERT ON secret_values TO {role}")).execute(&pool).await.unwrap();
        let log = std::fs::read_to_string(config.with_extension("log")).unwrap();
        assert!(log.contains("permission denied"), "the operator's log has the cause");
        pool.close().await;
    }

    agent.start_kill().unwrap();
    let _ = agent.wait().await;
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap();
    assert!(!log.contains(&marker), "a value reached the Agent's log");
}

/// The raw answer of the local API (status, body text), to check what a
/// refusal carries.
async fn raw_get(base: &str, who: &Identity, path: &str) -> (u16, String) {
    let identity =
        reqwest::Identity::from_pem(format!("{}\n{}", who.certificate_pem, who.key_pem.expose()).as_bytes())
            .unwrap();
    let http = reqwest::Client::builder()
        .use_rustls_tls()
        .tls_built_in_root_certs(false)
        .add_root_certificate(reqwest::Certificate::from_pem(who.ca_pem.as_bytes()).unwrap())
        .identity(identity)
        .build()
        .unwrap();
    let resp = http.get(format!("{base}{path}")).send().await.unwrap();
    (resp.status().as_u16(), resp.text().await.unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_end_to_end_with_the_agent_on_sqlite() {
    scenario(Store::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_end_to_end_with_the_agent_on_postgres() {
    scenario(Store::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_end_to_end_with_the_agent_on_dynamodb() {
    scenario(Store::Dynamo).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_with_no_agent_holding_the_environment_is_refused_before_it_exists() {
    let w = World::new().await;
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/secrets", json!({ "name": "api-key" })).await;
    let (status, body) =
        w.call(Method::POST, "/v1/secrets/api-key/versions", Some(json!({ "environment": "dev" }))).await;
    assert_eq!((status, body["error"]["code"].as_str()), (409, Some("NO_AGENT")), "{body}");
    let (_, detail) = w.call(Method::GET, "/v1/secrets/api-key", None).await;
    assert_eq!(detail["versions"], Value::Array(vec![]), "{detail}");
    // And a value in the request is refused as any value is.
    let (status, body) = w
        .call(
            Method::POST,
            "/v1/secrets/api-key/versions",
            Some(json!({ "environment": "dev", "value": "hunter2" })),
        )
        .await;
    assert_eq!((status, body["error"]["code"].as_str()), (400, Some("VALUE_NOT_ACCEPTED")), "{body}");
    assert!(!body.to_string().contains("hunter2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_certificate_and_a_new_secret_work_before_the_next_periodic_sync() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    // Periodic syncs an hour apart: only the first one happens in this test.
    let (local_url, _) = configure_syncing_every(&config, Store::Sqlite, None, 3600);
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/environments/dev/agents", json!({ "agent": "agent-1" })).await;
    let agent = w.run_agent(&config);
    eventually(&config, "the Agent's first sync", || async {
        let (_, holders) = w.call(Method::GET, "/v1/environments/dev/agents", None).await;
        let (_, agents) = w.call(Method::GET, "/v1/agents", None).await;
        holders.as_array().is_some_and(|h| !h.is_empty()) && agents[0]["local_url"].is_string()
    })
    .await;
    // A certificate issued, a secret created and written after that sync.
    let ana = identity(&w, &owner).await;
    w.post(&owner, "/v1/secrets", json!({ "name": "fresh" })).await;
    assert_eq!(set(&w, &owner, &ana, "fresh", "dev", "brand-new").await, 1);
    let read = agent_client(&config, &local_url, &ana).get_value("fresh", "dev", None).await;
    assert_eq!(read.map(|r| r.value.expose().clone()).map_err(|e| e.to_string()), Ok("brand-new".to_owned()));

    // A policy changed at the API reaches the Agent on SIGHUP, not an hour later.
    w.post(
        &owner,
        "/v1/policies",
        json!({ "name": "no-dev-reads", "text": "forbid (principal, action == Heimdall::Action::\"secret.read\", resource) when { context.environment == \"dev\" };" }),
    )
    .await;
    let pid = agent.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-HUP", &pid]).status().unwrap().success());
    let reader = agent_client(&config, &local_url, &ana);
    eventually(&config, "the policy after SIGHUP", || async {
        reader.get_value("fresh", "dev", None).await.err().and_then(|e| e.code())
            == Some(ErrorCode::Forbidden)
    })
    .await;
}

/// `POST /v1/values` (what `heimdall run` asks): every secret's latest
/// value in the order asked, every read recorded before any is sent; one
/// secret refused refuses them all, and records none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_values_are_read_all_or_none() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let held = holding_secret(&w, &config, "db-password", "s3cret", &[]).await;
    let owner = w.api.owner_token.clone();
    w.post(&owner, "/v1/secrets", json!({ "name": "api-key" })).await;
    assert_eq!(set(&w, &owner, &held.owner, "api-key", "dev", "k3y").await, 1);
    let reader = agent_client(&config, &held.local_url, &held.owner);
    let names = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let reads = || async {
        let mut total = 0;
        for secret in ["db-password", "api-key"] {
            let (_, log) = w.call(Method::GET, &format!("/v1/secrets/{secret}/access-log"), None).await;
            total += log.as_array().unwrap().iter().map(|r| r["reads"].as_u64().unwrap()).sum::<u64>();
        }
        total
    };

    let refused = reader.get_values("dev", &names(&["db-password", "never-created"])).await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::NotFound), "{refused}");
    assert!(refused.to_string().contains("never-created"), "{refused}");
    let got = reader.get_values("dev", &names(&["api-key", "db-password"])).await.unwrap();
    let got: Vec<(String, String)> = got.into_iter().map(|v| (v.name, v.value.expose().clone())).collect();
    assert_eq!(got, [("api-key".into(), "k3y".into()), ("db-password".into(), "s3cret".into())]);
    // The two reads of the answer, and none of the refusal.
    eventually(&config, "both reads in the access logs", || async { reads().await == 2 }).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(reads().await, 2, "the refused request recorded nothing");
    let empty = reader.get_values("dev", &[]).await.unwrap_err();
    assert_eq!(code(&empty), Some(ErrorCode::InvalidInput), "{empty}");
}

/// `[metrics] listen`: the Agent serves `GET /metrics` with its reads
/// served and refused by code, its access-trail commits and the age of its
/// policy snapshot, and no secret name or person in a label.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_metrics_count_reads_and_commits_and_name_no_secret() {
    let w = World::new().await;
    let config = w.enroll("agent-1").await;
    let port = free_port();
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, format!("{text}\n[metrics]\nlisten = \"127.0.0.1:{port}\"\n")).unwrap();
    let held = holding_secret(&w, &config, "db-password", "s3cret", &[]).await;
    let reader = agent_client(&config, &held.local_url, &held.owner);
    reader.get_value("db-password", "dev", None).await.unwrap();
    let refused = reader.get_value("never-created", "dev", None).await.unwrap_err();
    assert_eq!(code(&refused), Some(ErrorCode::NotFound));
    let scrape =
        reqwest::get(format!("http://127.0.0.1:{port}/metrics")).await.unwrap().text().await.unwrap();
    for expected in [
        "heimdall_agent_reads_total{outcome=\"served\",code=\"none\"} 1",
        "heimdall_agent_reads_total{outcome=\"refused\",code=\"NOT_FOUND\"} 1",
        "heimdall_agent_access_commit_records_count 1",
        "heimdall_agent_access_commit_seconds_bucket{",
        "heimdall_agent_policy_age_seconds ",
    ] {
        assert!(scrape.contains(expected), "no {expected:?} in:\n{scrape}");
    }
    for kept_out in ["db-password", "never-created", "owner@example.com", "s3cret"] {
        assert!(!scrape.contains(kept_out), "{kept_out:?} in the scrape:\n{scrape}");
    }
}
