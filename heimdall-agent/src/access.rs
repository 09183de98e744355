//! Who may read what, as the Agent knows it from its last sync: members
//! and their certificate pins, secrets, environments and the
//! organization's Cedar policies. Decisions are pure (time is an argument),
//! so the 24-hour staleness rule is tested without waiting.

use std::collections::HashMap;

use heimdall_core::authz::{self, secret_target, Action, CatalogTree, OrgPolicies, Principal};
use heimdall_core::ids::{CatalogId, MemberId, OrgId};
use heimdall_core::on_behalf::{self, OnBehalfOf};
use heimdall_core::program::{self, ProgramScope, Verb};
use heimdall_core::secrets::{reaches, Reach};
use heimdall_core::{ApiError, ErrorCode, Sha256Hex};
use heimdall_wire::{SyncMember, SyncResponse, SyncSecret};
use time::OffsetDateTime;

pub use heimdall_core::snapshot::MAX_POLICY_AGE;

/// A policy from the API that this Agent's Cedar does not compile: the
/// whole snapshot is refused (the previous one stays, and ages).
#[derive(Debug, thiserror::Error)]
#[error("policy {policy} from the API does not compile: {reason}")]
pub struct PolicyDoesNotCompile {
    pub policy: heimdall_core::ids::PolicyId,
    pub reason: String,
}

/// A person, as identified by their client certificate's SHA-256.
#[derive(Clone, Debug)]
pub struct Reader {
    pub member: MemberId,
    pub email: String,
    pub principal: Principal,
}

/// What one read is about, once allowed.
#[derive(Clone, Debug)]
pub struct AllowedRead {
    pub org: OrgId,
    pub reader: String,
    pub secret: String,
    pub secret_id: heimdall_core::ids::SecretId,
    pub environment_id: CatalogId,
    pub environment: String,
    /// The version the API says is current there (`heimdall_core::current`):
    /// an older one is never served as the latest.
    pub current: Option<i64>,
}

/// The last sync's answer, indexed for deciding.
#[derive(Debug)]
pub struct PolicySnapshot {
    org: OrgId,
    /// Certificate SHA-256 → member.
    by_certificate: HashMap<Sha256Hex, SyncMember>,
    /// Member id → member: on whose behalf a job or task may use a value.
    by_id: HashMap<MemberId, SyncMember>,
    /// The ids of this Agent's program tokens the API holds as live (`None`
    /// from an API that does not say: then no token is).
    live_tokens: Option<std::collections::HashSet<String>>,
    /// The CA's statement of this Agent's local-API certificates, shown to
    /// program clients (`GET /v1/certificate-status`).
    local_api_status: Option<String>,
    /// Secrets being deleted: no value of theirs is stored.
    deleting: std::collections::HashSet<String>,
    /// Deletions in one environment, being done or done lately: no version
    /// they cover is stored.
    deleted_in_environments: Vec<heimdall_wire::DeletedInEnvironment>,
    secrets: HashMap<String, SyncSecret>,
    /// The current version of each (secret, environment) this Agent holds.
    current: HashMap<(String, CatalogId), i64>,
    environments: Vec<(CatalogId, String)>,
    catalog: CatalogTree,
    policies: OrgPolicies,
    /// This Agent's clock when the answer arrived.
    received_at: OffsetDateTime,
    /// The API's clock when it answered (the Unix epoch for a snapshot
    /// read back from disk): work asked for later than this may have met
    /// policies this snapshot does not hold.
    answered_at: OffsetDateTime,
    /// Decisions already taken with this snapshot, by (certificate,
    /// secret, environment): a snapshot never changes, so neither do they,
    /// and the hot read path skips Cedar. Bounded; cleared when full.
    decided: std::sync::Mutex<HashMap<DecisionKey, Result<AllowedRead, ApiError>>>,
}

/// (certificate SHA-256, its key's SHA-256, secret, environment as asked).
type DecisionKey = (Sha256Hex, Sha256Hex, String, String);

/// Most decisions a snapshot remembers.
const MAX_REMEMBERED_DECISIONS: usize = 10_000;

impl PolicySnapshot {
    /// Indexes a sync answer. Policies that no longer compile fail the
    /// whole snapshot (the previous one stays, and ages).
    pub fn new(response: &SyncResponse, received_at: OffsetDateTime) -> Result<Self, PolicyDoesNotCompile> {
        let policies = OrgPolicies::compile(&response.policies)
            .map_err(|(policy, e)| PolicyDoesNotCompile { policy, reason: e.to_string() })?;
        let mut by_certificate = HashMap::new();
        for member in &response.members {
            for sha in &member.certificates {
                by_certificate.insert(sha.clone(), member.clone());
            }
        }
        Ok(Self {
            org: response.org_id,
            by_certificate,
            by_id: response.members.iter().map(|m| (m.id, m.clone())).collect(),
            live_tokens: response.live_program_tokens.as_ref().map(|ids| ids.iter().cloned().collect()),
            deleting: response.deleted_secrets.iter().cloned().collect(),
            local_api_status: response.local_api_status.clone(),
            deleted_in_environments: response.deleted_in_environments.clone(),
            secrets: response.secrets.iter().map(|s| (s.name.clone(), s.clone())).collect(),
            current: response
                .current_versions
                .iter()
                .map(|c| ((c.secret.clone(), c.environment), c.version))
                .collect(),
            environments: response.environments.iter().map(|e| (e.id, e.name.clone())).collect(),
            catalog: CatalogTree::new(response.catalog.iter().map(|e| (e.id, e.kind, e.parent_id))),
            policies,
            received_at,
            answered_at: response.at,
            decided: std::sync::Mutex::new(HashMap::new()),
        })
    }

    pub fn org(&self) -> OrgId {
        self.org
    }

    /// The version the last sync named current for `secret` (its stored
    /// name) in `environment`, if this Agent holds that environment.
    pub fn current_version(&self, secret: &str, environment: CatalogId) -> Option<i64> {
        self.current.get(&(secret.to_owned(), environment)).copied()
    }

    pub fn received_at(&self) -> OffsetDateTime {
        self.received_at
    }

    /// Whether the API answered this snapshot at or after `at` (its own
    /// clock): then it holds the policies work asked for at `at` met.
    pub fn answered_since(&self, at: OffsetDateTime) -> bool {
        self.answered_at >= at
    }

    /// The environment by id or name.
    pub fn environment(&self, key: &str) -> Option<(CatalogId, &str)> {
        self.environments
            .iter()
            .find(|(id, name)| name == key || id.to_string() == key)
            .map(|(id, name)| (*id, name.as_str()))
    }

    /// The environment's name, by id.
    pub fn environment_name(&self, id: CatalogId) -> Option<&str> {
        self.environments.iter().find(|(env, _)| *env == id).map(|(_, name)| name.as_str())
    }

    /// Whether this Agent may use `secret` in `environment` for the member
    /// `on_behalf` (a job's static credential or secret input, a
    /// database's admin secret): `heimdall_core::on_behalf::may_use` with
    /// this snapshot's members, catalog and policies, as the API decided
    /// it when the work was asked for. `what` names the work in the
    /// refusal. `NOT_FOUND` for a secret or environment the last sync did
    /// not list; `FORBIDDEN` for no one to act for, a member removed since,
    /// a personal secret or a read she may not make; `POLICY_STALE` past
    /// [`MAX_POLICY_AGE`].
    pub fn may_use(
        &self,
        on_behalf: Option<&OnBehalfOf>,
        what: &str,
        secret: &str,
        environment: CatalogId,
        now: OffsetDateTime,
    ) -> Result<(), ApiError> {
        self.check_fresh(now)?;
        let found = self.secrets.get(secret).ok_or_else(|| {
            ApiError::new(
                ErrorCode::NotFound,
                format!("secret {secret} not found (as of this Agent's last sync)"),
            )
        })?;
        let env_name =
            self.environment_name(environment).ok_or_else(|| ApiError::not_found("environment"))?;
        let Some(who) = on_behalf else { return Err(on_behalf::nobody(what, secret)) };
        let member = self.by_id.get(&who.member_id).ok_or_else(|| on_behalf::not_a_member(who, secret))?;
        let principal =
            Principal { org: self.org, id: member.id, email: member.email.clone(), role: member.role };
        let used = on_behalf::UsedSecret {
            name: &found.name,
            id: found.id,
            owner: found.owner_id,
            components: &found.components,
        };
        on_behalf::may_use(&principal, used, env_name, &self.catalog, &self.policies)
    }

    /// The member a certificate belongs to; `UNAUTHENTICATED` for a
    /// certificate the API did not list (unknown, revoked, expired, or its
    /// member removed).
    pub fn reader(&self, cert_sha256: &Sha256Hex) -> Result<Reader, ApiError> {
        let member = self.by_certificate.get(cert_sha256).ok_or_else(|| {
            ApiError::new(
                ErrorCode::Unauthenticated,
                "this client certificate is not (or no longer) valid here; run `heimdall login` again",
            )
        })?;
        Ok(Reader {
            member: member.id,
            email: member.email.clone(),
            principal: Principal {
                org: self.org,
                id: member.id,
                email: member.email.clone(),
                role: member.role,
            },
        })
    }

    /// Decides a read of `secret` in `environment` by the holder of the
    /// certificate `cert_sha256` (whose public key has `key_sha256`) at `now`.
    pub fn decide_read(
        &self,
        cert_sha256: &Sha256Hex,
        key_sha256: &Sha256Hex,
        secret: &str,
        environment: &str,
        now: OffsetDateTime,
    ) -> Result<AllowedRead, ApiError> {
        self.check_fresh(now)?;
        // (certificate, key, secret, environment) decides the same way for
        // as long as this snapshot lives.
        let key = (cert_sha256.to_owned(), key_sha256.to_owned(), secret.to_owned(), environment.to_owned());
        if let Some(known) = self.decided.lock().ok().and_then(|d| d.get(&key).cloned()) {
            return known;
        }
        let decision = self.decide_with_cedar(cert_sha256, key_sha256, secret, environment);
        if let Ok(mut decided) = self.decided.lock() {
            if decided.len() >= MAX_REMEMBERED_DECISIONS {
                decided.clear();
            }
            decided.insert(key, decision.clone());
        }
        decision
    }

    /// `POLICY_STALE` once the snapshot is too old: `heimdall_core::snapshot::check_fresh`.
    fn check_fresh(&self, now: OffsetDateTime) -> Result<(), ApiError> {
        heimdall_core::snapshot::check_fresh(self.received_at, now)
    }

    /// Decides `verb` on `secret` in `environment` by the program holding a
    /// token of `scope`, known in records and policies as `accessor`: the
    /// scope permits (`heimdall_core::program::check`), the organization's
    /// `forbid` policies can still refuse, and a personal secret is never
    /// reached (`program::organization_allows`, which the API decides
    /// again for a write or a deletion).
    pub fn decide_program(
        &self,
        scope: &ProgramScope,
        accessor: &str,
        verb: Verb,
        secret: &str,
        environment: &str,
        now: OffsetDateTime,
    ) -> Result<AllowedRead, ApiError> {
        self.check_fresh(now)?;
        // Registered with the API and not revoked there, as of the last
        // sync: a token list copied back from a backup revives nothing.
        if !self.live_tokens.as_ref().is_some_and(|live| live.contains(&scope.id)) {
            return Err(ApiError::new(
                ErrorCode::Unauthenticated,
                "this program token is not (or no longer) registered with the API",
            ));
        }
        let (environment_id, env_name) =
            self.environment(environment).ok_or_else(|| ApiError::not_found("environment"))?;
        let found = self.secrets.get(secret);
        let personal = found.is_none_or(|s| s.owner_id.is_some() || s.personal_owner.is_some());
        program::check(scope, verb, secret, personal, environment_id, now)?;
        let found = found.ok_or_else(|| ApiError::not_found("secret"))?;
        let target = secret_target(found.id, found.owner_id, &found.components, &self.catalog);
        program::organization_allows(
            self.org,
            &scope.id,
            accessor,
            verb,
            personal,
            &target,
            env_name,
            &self.policies,
        )?;
        Ok(AllowedRead {
            org: self.org,
            reader: accessor.to_owned(),
            secret: found.name.clone(),
            secret_id: found.id,
            environment_id,
            environment: env_name.to_owned(),
            current: self.current.get(&(found.name.clone(), environment_id)).copied(),
        })
    }

    /// Whether a value written with a grant for `version` of `secret` (by
    /// the grant's secret id) in `environment` may be stored, as this
    /// snapshot knows the secret and its deletions:
    /// `heimdall_core::deletion::may_store`.
    pub fn may_store(
        &self,
        secret: &str,
        secret_id: heimdall_core::ids::SecretId,
        environment: CatalogId,
        version: i64,
    ) -> Result<(), ApiError> {
        let covering = self
            .deleted_in_environments
            .iter()
            .filter(|d| d.secret == secret && d.environment == environment)
            .map(|d| d.through_version);
        heimdall_core::deletion::may_store(
            secret,
            self.secrets.get(secret).map(|known| known.id),
            secret_id,
            self.deleting.contains(secret),
            covering,
            version,
        )
    }

    /// The CA's statement of this Agent's local-API certificates, if the
    /// API gave one.
    pub fn local_api_status(&self) -> Option<&str> {
        self.local_api_status.as_deref()
    }

    /// The ids of this Agent's tokens the API holds as live; `None` when
    /// it does not say.
    pub fn live_tokens(&self) -> Option<&std::collections::HashSet<String>> {
        self.live_tokens.as_ref()
    }

    /// The organization secrets (never a personal one) a token's scope
    /// names, as of the last sync: what `dataFrom.extract` may hold.
    pub fn program_secrets(&self, scope: &ProgramScope) -> Vec<String> {
        let mut names: Vec<String> = self
            .secrets
            .values()
            .filter(|s| {
                s.owner_id.is_none() && s.personal_owner.is_none() && program::reaches(scope, &s.name)
            })
            .map(|s| s.name.clone())
            .collect();
        names.sort();
        names
    }

    fn decide_with_cedar(
        &self,
        cert_sha256: &Sha256Hex,
        key_sha256: &Sha256Hex,
        secret: &str,
        environment: &str,
    ) -> Result<AllowedRead, ApiError> {
        let reader = self.reader(cert_sha256)?;
        let not_found = || ApiError::not_found("secret");
        // Her own personal secret of that name first, then the organization's.
        let found = heimdall_core::secrets::lookup_order(secret, reader.member)
            .iter()
            .find_map(|name| self.secrets.get(name))
            .ok_or_else(not_found)?;
        // A personal secret exists only for its owner, by member id, and
        // opens only with a key bound to it, whatever anyone's role.
        if !reaches(found.owner_id, &found.owner_keys, reader.member, Reach::Value { key_sha256 }) {
            return Err(not_found());
        }
        let (environment_id, env_name) =
            self.environment(environment).ok_or_else(|| ApiError::not_found("environment"))?;
        // Policies apply to personal secrets too (personal restricts, it
        // never bypasses), under every Component the secret is linked to.
        let target = secret_target(found.id, found.owner_id, &found.components, &self.catalog);
        let decision =
            authz::decide(&reader.principal, Action::SecretRead, &target, Some(env_name), &self.policies);
        if !decision.is_allowed() {
            return Err(ApiError::new(
                ErrorCode::Forbidden,
                format!("a policy does not allow you to read {secret} in {env_name}"),
            ));
        }
        Ok(AllowedRead {
            org: self.org,
            reader: reader.email,
            secret: found.name.clone(),
            secret_id: found.id,
            environment_id,
            environment: env_name.to_owned(),
            current: self.current.get(&(found.name.clone(), environment_id)).copied(),
        })
    }
}

/// The latest snapshot, shared by the sync loop (writer) and the local API
/// (readers). `None` until the first sync: nothing is decided blind. The
/// local API can ask for a sync now ([`SharedPolicy::refresh`]) when it
/// meets a certificate, secret or environment the snapshot does not know:
/// a person who just logged in, a secret created a moment ago.
#[derive(Clone, Debug, Default)]
pub struct SharedPolicy {
    current: std::sync::Arc<std::sync::RwLock<Option<std::sync::Arc<PolicySnapshot>>>>,
    /// Set once the API answered that this Agent was revoked: from then on
    /// it decides nothing, however recent its last snapshot.
    revoked: std::sync::Arc<std::sync::atomic::AtomicBool>,
    wanted: std::sync::Arc<tokio::sync::Notify>,
    arrived: std::sync::Arc<tokio::sync::Notify>,
}

impl SharedPolicy {
    /// The snapshot to decide with; `None` before the first sync and after
    /// a revocation.
    pub fn current(&self) -> Option<std::sync::Arc<PolicySnapshot>> {
        if self.is_revoked() {
            return None;
        }
        self.current.read().ok().and_then(|s| s.clone())
    }

    /// Installs a new snapshot (the sync loop) and wakes whoever waits for one.
    pub fn install(&self, snapshot: PolicySnapshot) {
        if let Ok(mut current) = self.current.write() {
            *current = Some(std::sync::Arc::new(snapshot));
        }
        self.arrived.notify_waiters();
    }

    /// The API revoked this Agent: drops the snapshot, so every read and
    /// write is refused at once, and wakes whoever waits for a sync.
    pub fn revoke(&self) {
        self.revoked.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Ok(mut current) = self.current.write() {
            *current = None;
        }
        self.arrived.notify_waiters();
    }

    pub fn is_revoked(&self) -> bool {
        self.revoked.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Asks the sync loop for a sync now and waits up to `within` for a
    /// snapshot newer than `than`; returns the current one either way.
    pub async fn refresh(
        &self,
        than: OffsetDateTime,
        within: std::time::Duration,
    ) -> Option<std::sync::Arc<PolicySnapshot>> {
        let arrived = self.arrived.notified();
        tokio::pin!(arrived);
        arrived.as_mut().enable();
        self.wanted.notify_one();
        let _ = tokio::time::timeout(within, async {
            loop {
                if self.is_revoked() || self.current().is_some_and(|s| s.received_at() > than) {
                    return;
                }
                arrived.as_mut().await;
                arrived.set(self.arrived.notified());
                arrived.as_mut().enable();
            }
        })
        .await;
        self.current()
    }

    /// Asks the sync loop for a sync now, without waiting (SIGHUP).
    pub fn request_sync(&self) {
        self.wanted.notify_one();
    }

    /// Resolves when a sync was asked for (the sync loop).
    pub async fn wanted(&self) {
        self.wanted.notified().await;
    }
}

#[cfg(test)]
mod tests {
    use heimdall_core::domain::{CatalogKind, Policy, Role};
    use heimdall_core::ids::{PolicyId, SecretId};
    use heimdall_wire::{SyncCatalogEntry, SyncEnvironment};
    use time::Duration;
    use uuid::Uuid;

    use super::*;

    /// A digest named by a label, for reading.
    fn d(label: &str) -> Sha256Hex {
        Sha256Hex::of(label.as_bytes())
    }

    fn response(policies: Vec<Policy>) -> SyncResponse {
        let member = |n: u128, email: &str, role| SyncMember {
            id: MemberId::from_uuid(Uuid::from_u128(n)),
            email: email.into(),
            role,
            certificates: vec![d(&format!("cert-{n}"))],
        };
        SyncResponse {
            org_id: OrgId::from_uuid(Uuid::from_u128(1)),
            at: OffsetDateTime::UNIX_EPOCH,
            members: vec![
                member(10, "ana@example.com", Role::Owner),
                member(11, "bo@example.com", Role::Member),
            ],
            secrets: vec![
                SyncSecret {
                    id: SecretId::from_uuid(Uuid::from_u128(20)),
                    name: "db-password".into(),
                    personal_owner: None,
                    owner_id: None,
                    owner_keys: vec![],
                    components: vec![CatalogId::from_uuid(Uuid::from_u128(52))],
                },
                SyncSecret {
                    id: SecretId::from_uuid(Uuid::from_u128(21)),
                    name: "bo-notes".into(),
                    personal_owner: Some("member:00000000-0000-0000-0000-00000000000b".into()),
                    owner_id: Some(MemberId::from_uuid(Uuid::from_u128(11))),
                    owner_keys: vec![d("key-11")],
                    components: vec![],
                },
            ],
            secrets_generation: None,
            secrets_since: None,
            removed_secrets: vec![],
            environments: vec![
                SyncEnvironment { id: CatalogId::from_uuid(Uuid::from_u128(30)), name: "dev".into() },
                SyncEnvironment { id: CatalogId::from_uuid(Uuid::from_u128(31)), name: "prod".into() },
            ],
            catalog: vec![
                SyncCatalogEntry {
                    id: CatalogId::from_uuid(Uuid::from_u128(50)),
                    kind: CatalogKind::Domain,
                    parent_id: None,
                },
                SyncCatalogEntry {
                    id: CatalogId::from_uuid(Uuid::from_u128(51)),
                    kind: CatalogKind::System,
                    parent_id: Some(CatalogId::from_uuid(Uuid::from_u128(50))),
                },
                SyncCatalogEntry {
                    id: CatalogId::from_uuid(Uuid::from_u128(52)),
                    kind: CatalogKind::Component,
                    parent_id: Some(CatalogId::from_uuid(Uuid::from_u128(51))),
                },
            ],
            policies,
            assignments: vec![],
            deactivated: vec![],
            current_versions: vec![],
            current_omits_held: false,
            no_current: vec![],
            deleted_secrets: vec![],
            deleted_in_environments: vec![],
            released_environments: vec![],
            received_through: 0,
            local_api_certificates: None,
            live_program_tokens: None,
            local_api_status: None,
            transfers: Vec::new(),
            superseded: Vec::new(),
        }
    }

    #[test]
    fn decides_with_synced_roles_policies_and_pins_and_goes_stale_after_a_day() {
        let t0 = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let forbid_prod = Policy {
            id: PolicyId::from_uuid(Uuid::from_u128(40)),
            org_id: OrgId::from_uuid(Uuid::from_u128(1)),
            name: "no-prod-secrets-for-members".into(),
            description: String::new(),
            text: r#"forbid (principal, action == Heimdall::Action::"secret.read", resource)
                     when { context.environment == "prod" } unless { principal.role == "owner" };"#
                .into(),
            created_at: t0,
            created_by: "ana@example.com".into(),
            version: 1,
            updated_at: None,
            updated_by: None,
        };
        let snap = PolicySnapshot::new(&response(vec![forbid_prod]), t0).unwrap();
        let ok = snap.decide_read(&d("cert-11"), &d("key-11"), "db-password", "dev", t0).unwrap();
        assert_eq!((ok.reader.as_str(), ok.environment.as_str()), ("bo@example.com", "dev"));
        assert_eq!(
            snap.decide_read(&d("cert-11"), &d("key-11"), "db-password", "prod", t0).unwrap_err().code,
            ErrorCode::Forbidden
        );
        assert!(snap.decide_read(&d("cert-10"), &d("key-10"), "db-password", "prod", t0).is_ok());
        // Unknown certificate, unknown secret, unknown environment.
        assert_eq!(
            snap.decide_read(&d("cert-99"), &d("key-99"), "db-password", "dev", t0).unwrap_err().code,
            ErrorCode::Unauthenticated
        );
        assert_eq!(
            snap.decide_read(&d("cert-11"), &d("key-11"), "nope", "dev", t0).unwrap_err().code,
            ErrorCode::NotFound
        );
        assert_eq!(
            snap.decide_read(&d("cert-11"), &d("key-11"), "db-password", "qa", t0).unwrap_err().code,
            ErrorCode::NotFound
        );
        // A personal secret: its owner only, not even the org owner, and
        // only with the key bound to it.
        assert!(snap.decide_read(&d("cert-11"), &d("key-11"), "bo-notes", "dev", t0).is_ok());
        // … and the organization's forbids still apply to it.
        assert_eq!(
            snap.decide_read(&d("cert-11"), &d("key-11"), "bo-notes", "prod", t0).unwrap_err().code,
            ErrorCode::Forbidden
        );
        assert_eq!(
            snap.decide_read(&d("cert-10"), &d("key-10"), "bo-notes", "dev", t0).unwrap_err().code,
            ErrorCode::NotFound
        );
        assert_eq!(
            snap.decide_read(&d("cert-11"), &d("other-key"), "bo-notes", "dev", t0).unwrap_err().code,
            ErrorCode::NotFound
        );
        // 24 hours without a sync: still deciding; a second more: refused.
        assert!(snap
            .decide_read(&d("cert-11"), &d("key-11"), "db-password", "dev", t0 + MAX_POLICY_AGE)
            .is_ok());
        let stale = snap.decide_read(
            &d("cert-11"),
            &d("key-11"),
            "db-password",
            "dev",
            t0 + MAX_POLICY_AGE + Duration::seconds(1),
        );
        assert_eq!(stale.unwrap_err().code, ErrorCode::PolicyStale);
    }

    #[test]
    fn a_forbid_on_the_domain_reaches_the_secrets_linked_under_it() {
        let t0 = OffsetDateTime::from_unix_timestamp(1_800_000_000).unwrap();
        let domain = Uuid::from_u128(50);
        let forbid_domain = Policy {
            id: PolicyId::from_uuid(Uuid::from_u128(41)),
            org_id: OrgId::from_uuid(Uuid::from_u128(1)),
            name: "payments-secrets-owner-only".into(),
            description: String::new(),
            text: format!(
                r#"forbid (principal, action == Heimdall::Action::"secret.read", resource in Heimdall::Domain::"{domain}")
                   unless {{ principal.role == "owner" }};"#
            ),
            created_at: t0,
            created_by: "ana@example.com".into(),
            version: 1,
            updated_at: None,
            updated_by: None,
        };
        let snap = PolicySnapshot::new(&response(vec![forbid_domain]), t0).unwrap();
        assert_eq!(
            snap.decide_read(&d("cert-11"), &d("key-11"), "db-password", "dev", t0).unwrap_err().code,
            ErrorCode::Forbidden
        );
        assert!(snap.decide_read(&d("cert-10"), &d("key-10"), "db-password", "dev", t0).is_ok());
        // A personal secret linked nowhere is not under the domain.
        assert!(snap.decide_read(&d("cert-11"), &d("key-11"), "bo-notes", "dev", t0).is_ok());
    }
}
