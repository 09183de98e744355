use serde_json::json;
use uuid::Uuid;

use super::*;
use crate::ids::{CloudAccountId, ResourceId};
use crate::infra::{AccountAuth, AccountRef, JobOperation, ModuleRef, Provider};

const SHA: &str = "ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12ab12";

fn sha(text: &str) -> Sha256Hex {
    Sha256Hex::parse(text).unwrap()
}

fn pinned() -> Sha256Hex {
    sha(SHA)
}

fn pin(pinned: &Sha256Hex) -> Pin<'_> {
    Pin { path: Path::new("/usr/bin/terraform"), version: "1.9.0", sha256: pinned }
}

fn request(source: &str, input: serde_json::Value) -> JobRequest {
    JobRequest {
        resource_id: ResourceId::from_uuid(Uuid::from_u128(1)),
        resource_name: "orders".into(),
        revision: 1,
        operation: JobOperation::Apply,
        effective_input: input,
        module: Some(ModuleRef { source: source.into(), version: "1.0.0".into() }),
        schema_type: Some("bucket".into()),
        account: AccountRef {
            id: CloudAccountId::from_uuid(Uuid::from_u128(2)),
            provider: Provider::Aws,
            region: "eu-west-1".into(),
            state_bucket: "state".into(),
            state_backend: crate::infra::StateBackend::S3,
            state_storage_account: None,
            state_endpoint: None,
            auth: AccountAuth::Oidc(crate::infra::OidcTarget::aws("arn:aws:iam::1:role/x")),
        },
        environment_id: None,
        environment: None,
        secret_inputs: Vec::new(),
        imports: Vec::new(),
        region: "eu-west-1".into(),
        state_key: "heimdall/x.tfstate".into(),
        plan_key: None,
        plan_sha256: None,
        requested_by: None,
    }
}

fn allowed(globs: &[&str]) -> Vec<String> {
    globs.iter().map(|g| (*g).to_owned()).collect()
}

fn check(allowed: &[String], by_type: &ModulesByType, request: &JobRequest) -> Result<ModuleRef, ApiError> {
    check_run(pin(&pinned()), &pinned(), Modules { allowed_sources: allowed, by_type }, request)
}

#[test]
fn runs_only_the_pinned_terraform_with_an_allowed_module() {
    let globs = allowed(&["git::https://github.com/acme/terraform-*"]);
    let none = ModulesByType::new();
    let ok = request("git::https://github.com/acme/terraform-bucket", json!({ "size": 1 }));
    let modules = Modules { allowed_sources: &globs, by_type: &none };
    let pinned = pinned();
    check_run(pin(&pinned), &sha(&SHA.to_uppercase()), modules, &ok).unwrap();

    let err = check_run(pin(&pinned), &sha(&SHA.replace('a', "b")), modules, &ok).unwrap_err();
    assert_eq!(err.code, ErrorCode::TerraformChecksumMismatch);
    assert!(err.message.contains("nothing was run"), "{}", err.message);

    let other = request("git::https://github.com/evil/terraform-bucket", json!({}));
    assert_eq!(check(&globs, &none, &other).unwrap_err().code, ErrorCode::ModuleNotAllowed);
    // An empty allowlist runs nothing.
    assert_eq!(check(&[], &none, &ok).unwrap_err().code, ErrorCode::ModuleNotAllowed);

    let bad_key = request("git::https://github.com/acme/terraform-bucket", json!({ "a b": 1 }));
    assert_eq!(check(&globs, &none, &bad_key).unwrap_err().code, ErrorCode::SchemaViolation);
    let reserved =
        request("git::https://github.com/acme/terraform-bucket", json!({ "heimdall_region": "x" }));
    let err = check(&globs, &none, &reserved).unwrap_err();
    assert!(err.code == ErrorCode::SchemaViolation && err.message.contains("reserved"), "{err:?}");
}

#[test]
fn a_git_module_runs_at_its_version_and_a_query_cannot_widen_the_allowlist() {
    let none = ModulesByType::new();
    let globs = allowed(&["git::https://github.com/acme/terraform-*.git"]);
    // No ref: the version is the ref.
    let plain = request("git::https://github.com/acme/terraform-bucket.git", json!({}));
    assert_eq!(
        check(&globs, &none, &plain).unwrap().source,
        "git::https://github.com/acme/terraform-bucket.git?ref=1.0.0"
    );
    let depth = request("git::https://github.com/acme/terraform-bucket.git?depth=1", json!({}));
    assert_eq!(
        check(&globs, &none, &depth).unwrap().source,
        "git::https://github.com/acme/terraform-bucket.git?depth=1&ref=1.0.0"
    );
    // The version's own ref passes; another is refused.
    let same = request("git::https://github.com/acme/terraform-bucket.git?ref=1.0.0", json!({}));
    assert_eq!(check(&globs, &none, &same).unwrap().source, same.module.as_ref().unwrap().source);
    let other = request("git::https://github.com/acme/terraform-bucket.git?ref=main", json!({}));
    assert_eq!(check(&globs, &none, &other).unwrap_err().code, ErrorCode::ModuleNotAllowed);
    let twice = request("git::https://github.com/acme/terraform-bucket.git?ref=1.0.0&ref=main", json!({}));
    assert_eq!(check(&globs, &none, &twice).unwrap_err().code, ErrorCode::ModuleNotAllowed);
    // A glob ending in `*` is matched against the source without its query.
    let wide = allowed(&["git::https://github.com/acme/terraform-bucket.git*"]);
    let sneaky =
        request("git::https://github.com/acme/terraform-bucket.git?ref=1.0.0//../../evil", json!({}));
    assert_eq!(check(&wide, &none, &sneaky).unwrap_err().code, ErrorCode::ModuleNotAllowed);
    // Local paths and registry modules take no ref.
    let local = request("/srv/modules/bucket", json!({}));
    assert_eq!(check(&allowed(&["/srv/modules/*"]), &none, &local).unwrap().source, "/srv/modules/bucket");
}

#[test]
fn a_schema_without_a_module_runs_the_one_the_operator_maps_to_its_type() {
    let globs = allowed(&["/srv/modules/*"]);
    let mut job = request("unused", json!({}));
    job.module = None;
    let none = ModulesByType::new();
    let err = check(&globs, &none, &job).unwrap_err();
    assert!(err.code == ErrorCode::ModuleNotAllowed && err.message.contains("schema bucket"), "{err:?}");
    let mapped = ModulesByType::from([(
        "bucket".to_owned(),
        ModuleRef { source: "/srv/modules/bucket".into(), version: "2.0.0".into() },
    )]);
    assert_eq!(check(&globs, &mapped, &job).unwrap().source, "/srv/modules/bucket");
    // The allowlist still applies to a mapped module.
    assert_eq!(
        check(&allowed(&["/elsewhere/*"]), &mapped, &job).unwrap_err().code,
        ErrorCode::ModuleNotAllowed
    );
}

#[test]
fn aws_jobs_run_in_their_region_over_the_agents() {
    let mut job = request("x", json!({}));
    job.region = "eu-west-3".into();
    let agent = vec![(OsString::from("AWS_REGION"), OsString::from("us-east-1"))];
    let env = with_job(agent.clone(), &job);
    let get = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(get("AWS_REGION"), Some("eu-west-3".into()));
    assert_eq!(get("AWS_DEFAULT_REGION"), Some("eu-west-3".into()));
    assert_eq!(env.len(), 2, "replaced, not added twice: {env:?}");
    job.account.provider = Provider::Cloudflare;
    assert_eq!(with_job(agent.clone(), &job), agent, "no AWS variables for other providers");
}

#[test]
fn terraform_gets_an_allowlisted_environment() {
    let agent: Vec<(OsString, OsString)> = [
        ("PATH", "/usr/bin"),
        ("HOME", "/root"),
        ("HEIMDALL_MASTER_KEY", "5e5e"),
        ("HEIMDALL_REGISTRATION_TOKEN", "hmd_x"),
        ("TF_CLI_CONFIG_FILE", "/etc/tf.rc"),
        ("TF_VAR_input", "{}"),
        ("AWS_ACCESS_KEY_ID", "AKIA"),
        ("GOOGLE_APPLICATION_CREDENTIALS", "/gcp.json"),
        ("DATABASE_URL", "postgres://u:pw@h/db"),
    ]
    .into_iter()
    .map(|(k, v)| (k.into(), v.into()))
    .collect();
    let pass = vec!["GOOGLE_APPLICATION_CREDENTIALS".to_owned(), "HEIMDALL_MASTER_KEY".to_owned()];
    let env = job_env(agent, &pass, Some("HEIMDALL_MASTER_KEY"), Path::new("/work/job-1"), None);
    let mut names: Vec<&str> = env.iter().map(|(k, _)| k.to_str().unwrap()).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "AWS_ACCESS_KEY_ID",
            "CHECKPOINT_DISABLE",
            "GOOGLE_APPLICATION_CREDENTIALS",
            "HOME",
            "PATH",
            "TF_CLI_CONFIG_FILE",
            "TF_INPUT",
            "TF_IN_AUTOMATION"
        ]
    );
    assert!(env.iter().any(|(k, v)| k == "HOME" && v == "/work/job-1"));
}

#[test]
fn every_module_under_a_directory_is_allowed_and_nothing_beside_it() {
    assert_eq!([modules_under("/home/ana/infra/"), modules_under("/")], ["/home/ana/infra/**", "/**"]);
    let odd = allowed(&[&modules_under("/srv/a*b/[x]{y}")]);
    let run = |source: &str| check(&odd, &ModulesByType::new(), &request(source, json!({})));
    assert!(run("/srv/a*b/[x]{y}/bucket").is_ok(), "{odd:?}");
    assert!(run("/srv/aXb/x{y}/bucket").is_err(), "glob characters are literal: {odd:?}");
    assert!(run("/srv/a*b/[x]{y}z/bucket").is_err(), "beside it is not under it: {odd:?}");
}

#[test]
fn the_agents_cli_configuration_is_terraforms() {
    let agent: Vec<(OsString, OsString)> = vec![("TF_CLI_CONFIG_FILE".into(), "/etc/tf.rc".into())];
    let rc = |cli_config: Option<&Path>| {
        let env = job_env(agent.clone(), &[], None, Path::new("/work"), cli_config);
        let rcs: Vec<OsString> =
            env.into_iter().filter(|(k, _)| k == "TF_CLI_CONFIG_FILE").map(|(_, v)| v).collect();
        rcs
    };
    assert_eq!(rc(None), [OsString::from("/etc/tf.rc")]);
    assert_eq!(rc(Some(Path::new("/opt/mirror.tfrc"))), [OsString::from("/opt/mirror.tfrc")]);
}
