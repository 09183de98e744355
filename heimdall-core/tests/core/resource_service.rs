//! The Resources' use cases (`resources::service`, `resources::jobs`)
//! against in-memory stores: a Resource requested only where the caller
//! may write, its job queued with the account linked there; a job that
//! would use a secret the requester may not read refused before anything
//! is stored; lists of Resources and of jobs decided each in its own
//! environment.

use heimdall_core::accounts::service::Place;
use heimdall_core::accounts::CreateCloudAccount;
use heimdall_core::authz::Action;
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{CloudAccountId, JobId, ResourceId, SchemaId, SecretId};
use heimdall_core::infra::{AccountAuth, LinkScope, OidcTarget, Provider, ResourceStatus};
use heimdall_core::resources::jobs;
use heimdall_core::resources::service::{self, ListAsked, Requested};
use heimdall_core::schemas::NewSchema;
use heimdall_core::secrets::NewSecret;
use heimdall_core::ErrorCode;
use serde_json::json;
use uuid::Uuid;

use crate::fakes::{entry, Ana, MemoryResources};

fn job(n: u128) -> JobId {
    JobId::from_uuid(Uuid::from_u128(n))
}

/// Domain `shop` (system `store`, component `web`), environments `dev` and
/// `prod`, an account linked for both, a schema `bucket` (its input
/// `password` a secret's name) and a secret `db`.
async fn world() -> MemoryResources {
    let domain = entry(10, CatalogKind::Domain, "shop", None);
    let system = entry(11, CatalogKind::System, "store", Some(domain.id));
    let web = entry(12, CatalogKind::Component, "web", Some(system.id));
    let dev = entry(20, CatalogKind::Environment, "dev", None);
    let prod = entry(21, CatalogKind::Environment, "prod", None);
    let store = MemoryResources::with_catalog(&[domain, system, web, dev, prod]);
    let ana = Ana::allowed_everything();
    let account = CreateCloudAccount {
        name: "main".into(),
        provider: Provider::Aws,
        region: "eu-west-1".into(),
        state_bucket: "tf-state".into(),
        state_endpoint: None,
        state_backend: None,
        state_storage_account: None,
        auth: AccountAuth::Oidc(OidcTarget {
            role_arn: Some("arn:aws:iam::123456789012:role/heimdall".into()),
            ..OidcTarget::default()
        }),
        drift_check_every: None,
    };
    let accounts = heimdall_core::accounts::service::create(
        &store,
        &ana,
        account,
        CloudAccountId::from_uuid(Uuid::from_u128(30)),
    );
    accounts.await.unwrap();
    for env in ["dev", "prod"] {
        let at = Place { scope: LinkScope::Organization, scope_key: None, environment: env.into() };
        heimdall_core::accounts::service::link(&store, &ana, "main", at).await.unwrap();
    }
    let bucket = NewSchema {
        type_name: "bucket".into(),
        input_schema: json!({ "type": "object", "properties": {
            "name": { "type": "string" },
            "password": { "type": "string", "x-heimdall-secret": true } } }),
        ..NewSchema::default()
    };
    heimdall_core::schemas::service::create(&store, &ana, bucket, SchemaId::from_uuid(Uuid::from_u128(40)))
        .await
        .unwrap();
    let db = NewSecret { name: "db".into(), ..NewSecret::default() };
    heimdall_core::secrets::service::create(
        &store.accounts.secrets,
        &ana,
        db,
        &[],
        SecretId::from_uuid(Uuid::from_u128(50)),
    )
    .await
    .unwrap();
    store
}

fn bucket(n: u128, name: &str, environment: &str, input: serde_json::Value) -> Requested {
    Requested {
        id: ResourceId::from_uuid(Uuid::from_u128(n)),
        name: name.into(),
        component: "web".into(),
        environment: environment.into(),
        schema: "bucket".into(),
        input,
        region: None,
        imports: Vec::new(),
    }
}

#[tokio::test]
async fn a_resource_is_requested_only_where_the_caller_may_write_and_its_job_queued() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let applied =
        service::create(&store, &ana, bucket(100, "logs", "prod", json!({ "name": "logs" })), job(1))
            .await
            .unwrap();
    let queued = applied.queued.expect("a new Resource is planned by a job");
    assert_eq!((queued.id, queued.resource_id), (job(1), applied.resource.id));
    assert_eq!(store.jobs.lock().unwrap().len(), 1);
    assert_eq!(
        queued.request.requested_by.as_ref().map(|r| r.member_id),
        Some(crate::fakes::ANA),
        "it acts for her"
    );

    let bo = Ana::refused_in(Action::ResourceWrite, "prod");
    let refused =
        service::create(&store, &bo, bucket(101, "more", "prod", json!({})), job(2)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    let elsewhere =
        service::create(&store, &bo, bucket(102, "more", "dev", json!({})), job(3)).await.unwrap();
    assert!(elsewhere.queued.is_some(), "dev is not refused to her");
    assert_eq!(store.resources().len(), 2, "what was refused is not stored");
    assert_eq!(store.jobs.lock().unwrap().len(), 2, "and queues nothing");
    assert_eq!(store.actions().len(), 2, "one event per Resource requested, none for the refusal");
}

#[tokio::test]
async fn a_job_never_uses_a_secret_its_requester_may_not_read_there() {
    let store = world().await;
    let no_secrets = Ana::refused_in(Action::SecretRead, "prod");
    let asked = bucket(100, "logs", "prod", json!({ "name": "logs", "password": "db" }));
    let refused = service::create(&store, &no_secrets, asked.clone(), job(1)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(refused.message.contains("the input password"), "{}", refused.message);
    assert!(
        store.resources().is_empty() && store.jobs.lock().unwrap().is_empty(),
        "nothing stored, nothing queued"
    );

    let allowed = service::create(&store, &Ana::allowed_everything(), asked, job(2)).await.unwrap();
    assert!(allowed.queued.is_some());
}

#[tokio::test]
async fn lists_of_resources_and_jobs_decide_each_in_its_own_environment() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    let in_prod =
        service::create(&store, &ana, bucket(100, "logs", "prod", json!({})), job(1)).await.unwrap();
    service::create(&store, &ana, bucket(101, "logs-dev", "dev", json!({})), job(2)).await.unwrap();

    let all = service::list(&store, &ana, ListAsked::default(), 100, None).await.unwrap();
    assert_eq!(all.items.len(), 2);
    let no_prod = Ana::refused_in(Action::ResourceRead, "prod");
    let seen = service::list(&store, &no_prod, ListAsked::default(), 100, None).await.unwrap();
    assert_eq!(seen.items.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(), ["logs-dev"]);
    let read = service::readable(&store, &no_prod, "logs").await.unwrap_err();
    assert_eq!(read.code, ErrorCode::Forbidden);
    let first = service::list(&store, &ana, ListAsked::default(), 1, None).await.unwrap();
    assert!(first.next.is_some(), "a second Resource follows");

    let no_prod_jobs = Ana::refused_in(Action::JobRead, "prod");
    let listed = jobs::list(&store, &no_prod_jobs, jobs::ListAsked::default(), 100, None).await.unwrap();
    assert_eq!(listed.items.iter().map(|j| j.id).collect::<Vec<_>>(), [job(2)]);
    let prod_job = in_prod.queued.unwrap().id.to_string();
    assert_eq!(jobs::show(&store, &no_prod_jobs, &prod_job).await.unwrap_err().code, ErrorCode::Forbidden);
    assert_eq!(jobs::show(&store, &ana, "not-a-job").await.unwrap_err().code, ErrorCode::NotFound);
    let of_one = jobs::ListAsked { resource: Some("logs".into()), ..jobs::ListAsked::default() };
    assert_eq!(jobs::list(&store, &ana, of_one, 100, None).await.unwrap().items.len(), 1);
}

#[tokio::test]
async fn a_resource_that_never_ran_is_deleted_at_once() {
    let (store, ana) = (world().await, Ana::allowed_everything());
    service::create(&store, &ana, bucket(100, "logs", "prod", json!({})), job(1)).await.unwrap();
    let refused =
        service::delete(&store, &Ana::refused_in(Action::ResourceDelete, "prod"), "logs", job(2)).await;
    assert_eq!(refused.unwrap_err().code, ErrorCode::Forbidden);
    let deleted = service::delete(&store, &ana, "logs", job(3)).await.unwrap();
    assert!(deleted.queued.is_none(), "nothing was applied: nothing to destroy");
    assert_eq!(deleted.resource.status, ResourceStatus::Deleted);
    let again = service::delete(&store, &ana, &deleted.resource.id.to_string(), job(4)).await.unwrap();
    assert_eq!(again.resource.status, ResourceStatus::Deleted, "answered as it is");
}

/// Agent `edge` of `ORG`, enrolled with the certificate `cert`.
fn edge(store: &MemoryResources, cert: &[u8]) -> heimdall_core::queue::service::Peer {
    let id = heimdall_core::ids::AgentId::from_uuid(Uuid::from_u128(60));
    store.enroll(heimdall_core::infra::Agent {
        id,
        org_id: crate::fakes::ORG,
        name: "edge".into(),
        cert_sha256: heimdall_core::Sha256Hex::of(cert),
        created_at: time::OffsetDateTime::UNIX_EPOCH,
        created_by: "ana@example.com".into(),
        revoked_at: None,
        last_seen_at: None,
        local_url: None,
    });
    heimdall_core::queue::service::Peer { id, cert_sha256: heimdall_core::Sha256Hex::of(cert) }
}

#[tokio::test]
async fn an_agent_is_its_certificate_and_works_a_job_only_under_its_lease() {
    use heimdall_core::ids::LeaseId;
    use heimdall_core::queue::service as channel;
    let (store, ana) = (world().await, Ana::allowed_everything());
    service::create(&store, &ana, bucket(100, "logs", "prod", json!({})), job(1)).await.unwrap();
    let peer = edge(&store, b"edge's certificate");
    let now = time::OffsetDateTime::UNIX_EPOCH;

    let forged = channel::Peer { cert_sha256: heimdall_core::Sha256Hex::of(b"another"), ..peer.clone() };
    assert_eq!(channel::seen(&store, &forged, now).await.unwrap_err().code, ErrorCode::Unauthenticated);

    let agent = channel::seen(&store, &peer, now).await.unwrap();
    assert_eq!(agent.last_seen_at, Some(now));
    let lease = LeaseId::from_uuid(Uuid::from_u128(70));
    let claimed = channel::claim(&store, &agent, None, lease, now).await.unwrap().expect("the queued plan");
    let key = claimed.id.to_string();
    channel::heartbeat(&store, &peer, (&key, lease), Some("lock-1"), now).await.unwrap();
    let other = LeaseId::from_uuid(Uuid::from_u128(71));
    let stolen = channel::append_log(&store, &peer, (&key, other), "x").await.unwrap_err();
    assert_eq!(stolen.code, ErrorCode::Conflict, "another lease is fenced off");
    let unknown = channel::append_log(&store, &peer, ("not-a-job", lease), "x").await.unwrap_err();
    assert_eq!(unknown.code, ErrorCode::NotFound);

    let failed = channel::Reported::Failed {
        reason: "the module refused".into(),
        code: Some(ErrorCode::ModuleNotAllowed),
        retryable: false,
    };
    let (_, ended) = channel::finish(&store, &peer, (&key, lease), ("tail", failed), now).await.unwrap();
    assert_eq!(ended.status, heimdall_core::infra::JobStatus::Failed);
    assert_eq!(ended.reason.as_deref(), Some("MODULE_NOT_ALLOWED: the module refused"));
    assert_eq!(store.logs.lock().unwrap().len(), 1, "the tail was appended");
    let again = channel::heartbeat(&store, &peer, (&key, lease), None, now).await.unwrap_err();
    assert_eq!(again.code, ErrorCode::Conflict, "an ended attempt's lease is gone");
}
