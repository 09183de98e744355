//! The cloud accounts' use cases (`accounts::service`) against in-memory
//! stores: an account registered, linked at a scope for an environment
//! (a link at the same place replaced), unlinked and deleted once nothing
//! links it; a static credential's secret decided as the caller's use; a
//! refusal that stores and records nothing.

use heimdall_core::accounts::service::{self, Place};
use heimdall_core::accounts::{CreateCloudAccount, UpdateCloudAccount};
use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::domain::CatalogKind;
use heimdall_core::ids::{CatalogId, CloudAccountId, SecretId};
use heimdall_core::infra::{AccountAuth, LinkScope, OidcTarget, Provider};
use heimdall_core::secrets::NewSecret;
use heimdall_core::ErrorCode;
use uuid::Uuid;

use crate::fakes::{entry, Ana, MemoryAccounts};

fn id(n: u128) -> CloudAccountId {
    CloudAccountId::from_uuid(Uuid::from_u128(n))
}

/// Domain `shop` (system `store`, component `web`), environments `dev` and `prod`.
fn world() -> (MemoryAccounts, CatalogId) {
    let domain = entry(10, CatalogKind::Domain, "shop", None);
    let system = entry(11, CatalogKind::System, "store", Some(domain.id));
    let web = entry(12, CatalogKind::Component, "web", Some(system.id));
    let dev = entry(20, CatalogKind::Environment, "dev", None);
    let prod = entry(21, CatalogKind::Environment, "prod", None);
    let web_id = web.id;
    (MemoryAccounts::with_catalog(&[domain, system, web, dev, prod]), web_id)
}

fn account(name: &str, auth: AccountAuth) -> CreateCloudAccount {
    CreateCloudAccount {
        name: name.into(),
        provider: Provider::Aws,
        region: "eu-west-1".into(),
        state_bucket: "tf-state".into(),
        state_endpoint: None,
        state_backend: None,
        state_storage_account: None,
        auth,
        drift_check_every: None,
    }
}

fn role() -> AccountAuth {
    AccountAuth::Oidc(OidcTarget {
        role_arn: Some("arn:aws:iam::123456789012:role/heimdall".into()),
        ..OidcTarget::default()
    })
}

fn at(scope: LinkScope, scope_key: Option<&str>, environment: &str) -> Place {
    Place { scope, scope_key: scope_key.map(str::to_owned), environment: environment.into() }
}

#[tokio::test]
async fn an_account_is_linked_relinked_unlinked_and_deleted_once_nothing_links_it() {
    let ((store, _), ana) = (world(), Ana::allowed_everything());
    let main = service::create(&store, &ana, account("main", role()), id(1)).await.unwrap();
    let other = service::create(&store, &ana, account("other", role()), id(2)).await.unwrap();
    service::link(&store, &ana, "main", at(LinkScope::Organization, None, "prod")).await.unwrap();
    service::link(&store, &ana, "main", at(LinkScope::Domain, Some("shop"), "dev")).await.unwrap();
    let (shown, links) = service::show(&store, &ana, &main.id.to_string()).await.unwrap();
    assert_eq!((shown.name.as_str(), links.len()), ("main", 2));

    // Another account linked at the same place replaces it there.
    service::link(&store, &ana, "other", at(LinkScope::Organization, None, "prod")).await.unwrap();
    assert_eq!(service::show(&store, &ana, "main").await.unwrap().1.len(), 1);
    assert_eq!(service::show(&store, &ana, &other.id.to_string()).await.unwrap().1.len(), 1);

    let linked = service::delete(&store, &ana, "main").await.unwrap_err();
    assert_eq!(linked.code, ErrorCode::NotEmpty, "{}", linked.message);
    service::unlink(&store, &ana, "main", at(LinkScope::Domain, Some("shop"), "dev")).await.unwrap();
    let again = service::unlink(&store, &ana, "main", at(LinkScope::Domain, Some("shop"), "dev")).await;
    assert_eq!(again.unwrap_err().code, ErrorCode::NotFound);
    service::delete(&store, &ana, "main").await.unwrap();
    let names: Vec<String> = service::list(&store, &ana).await.unwrap().into_iter().map(|a| a.name).collect();
    assert_eq!(names, ["other"]);
    use AuditAction::{
        CloudAccountCreated as C, CloudAccountDeleted as D, CloudAccountLinked as L,
        CloudAccountUnlinked as U,
    };
    assert_eq!(store.actions(), [C, C, L, L, L, U, D]);
}

#[tokio::test]
async fn a_link_names_its_place_exactly() {
    let ((store, _), ana) = (world(), Ana::allowed_everything());
    service::create(&store, &ana, account("main", role()), id(1)).await.unwrap();
    let cases = [
        (at(LinkScope::Organization, Some("shop"), "dev"), ErrorCode::InvalidInput),
        (at(LinkScope::System, None, "dev"), ErrorCode::InvalidInput),
        (at(LinkScope::Domain, Some("nowhere"), "dev"), ErrorCode::NotFound),
        (at(LinkScope::Organization, None, "staging"), ErrorCode::NotFound),
    ];
    for (place, code) in cases {
        let refused = service::link(&store, &ana, "main", place.clone()).await.unwrap_err();
        assert_eq!(refused.code, code, "{place:?}");
    }
    assert!(service::show(&store, &ana, "main").await.unwrap().1.is_empty());
    assert_eq!(store.actions(), [AuditAction::CloudAccountCreated]);
}

#[tokio::test]
async fn a_static_credential_is_a_secret_the_caller_may_have_used() {
    let ((store, web), ana) = (world(), Ana::allowed_everything());
    let missing = service::create(&store, &ana, account("keys", static_auth()), id(1)).await.unwrap_err();
    assert_eq!(missing.code, ErrorCode::NotFound);
    assert!(missing.message.contains("heimdall secret create aws-keys"), "{}", missing.message);

    let secret = NewSecret { name: "aws-keys".into(), ..NewSecret::default() };
    let under_web = ["web".to_owned()];
    let secret_id = SecretId::from_uuid(Uuid::from_u128(5));
    heimdall_core::secrets::service::create(&store.secrets, &ana, secret, &under_web, secret_id)
        .await
        .unwrap();
    // Bo may not read what is under web: he cannot make a job use it.
    let bo = Ana::refused(Action::SecretRead, Some(web));
    let refused = service::create(&store, &bo, account("keys", static_auth()), id(1)).await.unwrap_err();
    assert_eq!(refused.code, ErrorCode::Forbidden);
    assert!(service::list(&store, &ana).await.unwrap().is_empty());

    service::create(&store, &ana, account("keys", static_auth()), id(1)).await.unwrap();
    let linked = service::link(&store, &bo, "keys", at(LinkScope::Organization, None, "dev")).await;
    assert_eq!(linked.unwrap_err().code, ErrorCode::Forbidden, "linking uses the secret in dev");
    // Switching an account to a secret is decided as its creation is.
    service::create(&store, &ana, account("roles", role()), id(2)).await.unwrap();
    let switch = UpdateCloudAccount { auth: Some(static_auth()), ..UpdateCloudAccount::default() };
    assert_eq!(service::update(&store, &bo, "roles", &switch).await.unwrap_err().code, ErrorCode::Forbidden);
    let region = UpdateCloudAccount { region: Some("eu-central-1".into()), ..UpdateCloudAccount::default() };
    assert_eq!(service::update(&store, &bo, "roles", &region).await.unwrap().region, "eu-central-1");
}

fn static_auth() -> AccountAuth {
    AccountAuth::Static { secret: "aws-keys".into() }
}

#[tokio::test]
async fn a_bad_account_is_refused_before_the_policies_are_asked() {
    let ((store, _), ana) = (world(), Ana::allowed_everything());
    let bad_bucket = CreateCloudAccount { state_bucket: "No_Such".into(), ..account("main", role()) };
    assert_eq!(
        service::create(&store, &ana, bad_bucket, id(1)).await.unwrap_err().code,
        ErrorCode::InvalidInput
    );
    assert_eq!(ana.asked(), 0);
    let refused = Ana::refused(Action::CloudAccountWrite, None);
    let denied = service::create(&store, &refused, account("main", role()), id(1)).await.unwrap_err();
    assert_eq!(denied.code, ErrorCode::Forbidden);
    assert!(store.actions().is_empty());
}
