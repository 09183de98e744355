//! Program tokens: what the operator of an Agent lets one program reach,
//! decided here for the Agent's local API. A token names one environment,
//! the secrets it reaches (globs over names) and its verbs; it never
//! reaches a personal secret, and organization `forbid` policies still
//! apply to it (`authz::forbids_program`).
//!
//! A token is `hdp_<agent>_<id>_<secret>`: `<agent>` is the id of the
//! Agent that made it (32 hex digits), so that a client knows which Agent
//! to expect by its certificate's URI SAN (never a host name); `<id>`
//! finds its scope; only the SHA-256 of the whole token is kept, compared
//! in constant time by the Agent. Making one (randomness) and keeping the list (a file) are the
//! Agent's; parsing and the scope's rule are here.

mod register;
pub mod service;

pub use register::{register, NewToken, TokenPlan};

use globset::Glob;
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::error::{ApiError, ErrorCode};
use crate::ids::{AgentId, CatalogId};
use crate::names::validate_name;

/// What a token may do. `write` and `delete` go through the API on the
/// program's behalf, as people's writes and deletions do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    Read,
    Write,
    Delete,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Read => "read",
            Verb::Write => "write",
            Verb::Delete => "delete",
        }
    }

    /// The policy action a verb is decided as: a deletion is a write of
    /// the secret, as it is for people.
    pub fn action(self) -> crate::authz::Action {
        match self {
            Verb::Read => crate::authz::Action::SecretRead,
            Verb::Write | Verb::Delete => crate::authz::Action::SecretWrite,
        }
    }
}

/// The prefix every program token starts with.
pub const TOKEN_PREFIX: &str = "hdp_";
/// The length of a token's id, in hex digits.
pub const ID_LEN: usize = 16;

/// One token's scope, as the Agent keeps it (never the token itself).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgramScope {
    /// The token's id: its first part, not a secret.
    pub id: String,
    /// Who the program is, as records and policies name it.
    pub name: String,
    /// The one environment it reaches, by its name when the token was
    /// made (shown; never used to decide: a name can be given to another
    /// environment).
    pub environment: String,
    /// That environment, by id: what decides. Absent in a token made
    /// before tokens were registered with the API; such a token reaches
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<CatalogId>,
    /// Globs over secret names (`billing-*`).
    pub secrets: Vec<String>,
    pub verbs: Vec<Verb>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    /// SHA-256 of the whole token, hex.
    pub token_sha256: String,
}

/// A new scope's fields, checked before anything is made.
pub fn check_new(name: &str, environment: &str, secrets: &[String], verbs: &[Verb]) -> Result<(), ApiError> {
    validate_name("name", name)?;
    validate_name("environment", environment)?;
    if secrets.is_empty() {
        return Err(ApiError::invalid_input(
            "name at least one --secret (a name, or a glob such as 'billing-*')",
        ));
    }
    for glob in secrets {
        Glob::new(glob).map_err(|e| ApiError::invalid_input(format!("--secret {glob:?} is no glob: {e}")))?;
    }
    if verbs.is_empty() {
        return Err(ApiError::invalid_input("name at least one --verb"));
    }
    Ok(())
}

/// `--expires`: `90d`, `12h` or `never`, as a lifetime (`None`: never).
pub fn parse_expires(text: &str) -> Result<Option<time::Duration>, ApiError> {
    if text == "never" {
        return Ok(None);
    }
    let bad = || ApiError::invalid_input("--expires is a number of days or hours (90d, 12h), or never");
    let (number, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?);
    let number: i64 = number.parse().map_err(|_| bad())?;
    let lifetime = match unit {
        "d" if (1..=3660).contains(&number) => time::Duration::days(number),
        "h" if (1..=87_840).contains(&number) => time::Duration::hours(number),
        _ => return Err(bad()),
    };
    Ok(Some(lifetime))
}

/// What a token's shape tells before its hash is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenParts<'a> {
    /// The Agent that made it, and the only one that accepts it.
    pub agent: AgentId,
    /// Its scope's id.
    pub id: &'a str,
}

/// A token as `token create` prints it; `secret_hex` is its random part.
pub fn format_token(agent: AgentId, id: &str, secret_hex: &str) -> String {
    format!("{TOKEN_PREFIX}{}_{id}_{secret_hex}", agent.as_uuid().simple())
}

/// The parts of a presented token, if it has a token's shape; the rest is
/// checked against the kept hash.
pub fn parse_token(token: &str) -> Option<TokenParts<'_>> {
    let hex = |s: &str| s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    let mut parts = token.strip_prefix(TOKEN_PREFIX)?.split('_');
    let (agent, id, secret) = (parts.next()?, parts.next()?, parts.next()?);
    let shaped = parts.next().is_none()
        && agent.len() == 32
        && id.len() == ID_LEN
        && secret.len() >= 32
        && hex(agent)
        && hex(id)
        && hex(secret);
    if !shaped {
        return None;
    }
    let agent = AgentId::from_uuid(uuid::Uuid::try_parse(agent).ok()?);
    Some(TokenParts { agent, id })
}

/// A program as an Agent names it to the API: a token id of the right
/// shape and a valid name; anything else is refused before it is used.
pub fn check_caller(token_id: &str, name: &str) -> Result<(), ApiError> {
    let hex = token_id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if token_id.len() != ID_LEN || !hex {
        return Err(ApiError::invalid_input(format!("a program token's id is {ID_LEN} hex digits")));
    }
    validate_name("program", name)
}

/// How a program appears in access records and to policies:
/// `program NAME@AGENT`.
pub fn accessor(name: &str, agent: &str) -> String {
    format!("program {name}@{agent}")
}

/// Whether `scope` lets its program `verb` the secret `secret` (personal
/// when `owner` is some member) in the environment `environment` (by id)
/// at `now`. Unknown and out-of-scope secrets are alike `NOT_FOUND`, so a
/// token learns nothing of what it cannot reach; a revoked or expired
/// token, or one made before tokens named their environment by id, is
/// `UNAUTHENTICATED`.
pub fn check(
    scope: &ProgramScope,
    verb: Verb,
    secret: &str,
    personal: bool,
    environment: CatalogId,
    now: OffsetDateTime,
) -> Result<(), ApiError> {
    check_verb(scope, verb, now)?;
    let Some(reached) = scope.environment_id else {
        return Err(ApiError::new(
            ErrorCode::Unauthenticated,
            format!(
                "the token of program {} was made before tokens were registered with the API; \
                 make a new one with `heimdall-agent token create`",
                scope.name
            ),
        ));
    };
    if environment != reached {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("the token of program {} reaches environment {} only", scope.name, scope.environment),
        ));
    }
    if personal || !reaches(scope, secret) {
        return Err(ApiError::not_found("secret"));
    }
    Ok(())
}

/// Whether the organization lets a program (by its token's id, and its
/// accessor `program NAME@AGENT`) `verb` a secret in `environment`: never
/// a personal secret (`NOT_FOUND`, as out of scope), and no `forbid`
/// policy may refuse it (`FORBIDDEN`). The Agent decides this with its
/// synced policies after [`check`]; the API decides it again, with the
/// policies as stored, before it numbers a version or starts a deletion
/// for the program.
#[allow(clippy::too_many_arguments)]
pub fn organization_allows(
    org: crate::ids::OrgId,
    token_id: &str,
    accessor: &str,
    verb: Verb,
    personal: bool,
    target: &crate::authz::Target,
    environment: &str,
    policies: &crate::authz::OrgPolicies,
) -> Result<(), ApiError> {
    if personal {
        return Err(ApiError::not_found("secret"));
    }
    crate::authz::forbids_program(org, token_id, accessor, verb.action(), target, Some(environment), policies)
        .map_err(|_| {
            ApiError::new(
                ErrorCode::Forbidden,
                format!("a policy does not allow {accessor} to {} secrets in {environment}", verb.as_str()),
            )
        })
}

/// A live token that has `verb`: what is known before a request's body
/// is read (the rest is [`check`]).
pub fn check_verb(scope: &ProgramScope, verb: Verb, now: OffsetDateTime) -> Result<(), ApiError> {
    check_alive(scope, now)?;
    if !scope.verbs.contains(&verb) {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("the token of program {} may not {} secrets", scope.name, verb.as_str()),
        ));
    }
    Ok(())
}

/// A token that is neither revoked nor expired.
pub fn check_alive(scope: &ProgramScope, now: OffsetDateTime) -> Result<(), ApiError> {
    let dead = scope.revoked_at.is_some() || scope.expires_at.is_some_and(|at| at <= now);
    if dead {
        return Err(ApiError::new(ErrorCode::Unauthenticated, "this program token is revoked or expired"));
    }
    Ok(())
}

/// Whether a secret's name is one of the scope's globs.
pub fn reaches(scope: &ProgramScope, secret: &str) -> bool {
    matches_any(&scope.secrets, secret)
}

fn matches_any(globs: &[String], secret: &str) -> bool {
    globs.iter().any(|glob| Glob::new(glob).is_ok_and(|g| g.compile_matcher().is_match(secret)))
}

// ---- What an owner lets an Agent's programs do, and the tokens it made ------------

/// An owner's word that the programs of one Agent may `verbs` (write,
/// delete) the secrets `secret` (a name or glob) names in one environment.
/// Without one, a program token can only read: a write or a deletion is
/// asked of the API by the Agent, and the API lets a program do only
/// what an allowance covers, so a stolen Agent key does no more.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgramAllowance {
    pub agent_id: AgentId,
    pub environment_id: CatalogId,
    /// The environment's name now (shown).
    pub environment: String,
    /// A secret name or glob (`billing-*`).
    pub secret: String,
    /// `write`, `delete` or both.
    pub verbs: Vec<Verb>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    pub created_by: String,
}

/// A new allowance's glob and verbs: a valid glob, and only `write` and
/// `delete` (reads need no allowance: a token's own scope decides them,
/// and the Agent records each).
pub fn check_allowance(secret: &str, verbs: &[Verb]) -> Result<(), ApiError> {
    Glob::new(secret).map_err(|e| ApiError::invalid_input(format!("--secret {secret:?} is no glob: {e}")))?;
    if verbs.is_empty() {
        return Err(ApiError::invalid_input("name at least one --verb: write or delete"));
    }
    if verbs.contains(&Verb::Read) {
        return Err(ApiError::invalid_input(
            "an allowance is for write and delete: a token's reads need none (its scope decides them)",
        ));
    }
    Ok(())
}

/// Whether every secret name `glob` matches is one `allowance` matches:
/// the same glob, a plain name the allowance matches, `*`, or a glob whose
/// fixed start lies inside a `prefix*` allowance. Anything else does not
/// fit (refused rather than guessed).
pub fn fits(allowance: &str, glob: &str) -> bool {
    const META: &[char] = &['*', '?', '[', ']', '{', '}', '\\'];
    if allowance == glob || allowance == "*" {
        return true;
    }
    if !glob.contains(META) {
        return matches_any(&[allowance.to_owned()], glob);
    }
    match allowance.strip_suffix('*') {
        Some(prefix) if !prefix.contains(META) => {
            let fixed = &glob[..glob.find(META).unwrap_or(glob.len())];
            fixed.starts_with(prefix)
        }
        _ => false,
    }
}

/// A program token as the API knows it: registered by the Agent that made
/// it, never the token itself (nor its hash).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisteredToken {
    /// The token's id (its second part).
    pub id: String,
    pub agent_id: AgentId,
    pub name: String,
    pub environment_id: CatalogId,
    /// The environment's name now (shown).
    pub environment: String,
    pub secrets: Vec<String>,
    pub verbs: Vec<Verb>,
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
}

impl RegisteredToken {
    /// Neither revoked nor expired at `now`.
    pub fn is_live(&self, now: OffsetDateTime) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| at > now)
    }
}

/// Whether `allowances` let `agent`'s programs `verb` what `glob` names in
/// `environment`.
fn allowed(allowances: &[ProgramAllowance], environment: CatalogId, verb: Verb, glob: &str) -> bool {
    allowances
        .iter()
        .any(|a| a.environment_id == environment && a.verbs.contains(&verb) && fits(&a.secret, glob))
}

fn not_allowed(agent: &str, verb: Verb, what: &str, environment: &str) -> ApiError {
    ApiError::new(
        ErrorCode::Forbidden,
        format!(
            "no allowance lets the programs of Agent {agent} {} {what} in {environment}: an owner runs \
             `heimdall agent allow-programs {agent} --environment {environment} --secret '…' --verb {}`",
            verb.as_str(),
            verb.as_str()
        ),
    )
}

/// Whether Agent `agent` may register `token`: a valid scope, and each of
/// its `write` and `delete` over each of its globs inside an owner's
/// allowance for that environment.
pub fn check_registration(
    agent: &str,
    token: &RegisteredToken,
    allowances: &[ProgramAllowance],
) -> Result<(), ApiError> {
    check_new(&token.name, &token.environment, &token.secrets, &token.verbs)?;
    if token.id.len() != ID_LEN || !token.id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(ApiError::invalid_input(format!("a program token's id is {ID_LEN} hex digits")));
    }
    for verb in token.verbs.iter().filter(|v| **v != Verb::Read) {
        for glob in &token.secrets {
            if !allowed(allowances, token.environment_id, *verb, glob) {
                return Err(not_allowed(agent, *verb, glob, &token.environment));
            }
        }
    }
    Ok(())
}

/// Whether a write or deletion the Agent `agent` asks for a program may
/// go ahead at the API: the token id is registered by that Agent, live,
/// named as the Agent says, has the verb, reaches that environment (by
/// id) and secret, and an owner's allowance (as it stands now) covers the
/// secret there. The Agent's word alone is never enough: this is what a
/// stolen Agent key meets.
#[allow(clippy::too_many_arguments)]
pub fn check_registered_call(
    agent: &str,
    token: Option<&RegisteredToken>,
    name: &str,
    verb: Verb,
    secret: &str,
    environment: (CatalogId, &str),
    allowances: &[ProgramAllowance],
    now: OffsetDateTime,
) -> Result<(), ApiError> {
    let unknown = || {
        ApiError::new(ErrorCode::Unauthenticated, "that program token is not registered, or no longer live")
    };
    let token = token.filter(|t| t.is_live(now) && t.name == name).ok_or_else(unknown)?;
    if !token.verbs.contains(&verb) {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("the token of program {} may not {} secrets", token.name, verb.as_str()),
        ));
    }
    if token.environment_id != environment.0 {
        return Err(ApiError::new(
            ErrorCode::Forbidden,
            format!("the token of program {} reaches environment {} only", token.name, token.environment),
        ));
    }
    if !matches_any(&token.secrets, secret) {
        return Err(ApiError::not_found("secret"));
    }
    if !allowed(allowances, environment.0, verb, secret) {
        return Err(not_allowed(agent, verb, secret, environment.1));
    }
    Ok(())
}

/// What registering `token` (its scope, never the token) records.
pub fn token_registered(token: &RegisteredToken) -> crate::audit::EventPlan {
    crate::audit::EventPlan {
        action: crate::audit::AuditAction::ProgramTokenRegistered,
        target: format!("agent:{}", token.agent_id),
        detail: serde_json::json!({ "agent": token.agent_id, "token_id": token.id, "program": token.name,
            "environment": token.environment, "secrets": token.secrets, "verbs": token.verbs }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prod() -> CatalogId {
        CatalogId::from_uuid(uuid::Uuid::from_u128(7))
    }

    fn dev() -> CatalogId {
        CatalogId::from_uuid(uuid::Uuid::from_u128(8))
    }

    fn scope() -> ProgramScope {
        ProgramScope {
            id: "0123456789abcdef".into(),
            name: "billing-api".into(),
            environment: "prod".into(),
            environment_id: Some(prod()),
            secrets: vec!["billing-*".into(), "shared-key".into()],
            verbs: vec![Verb::Read],
            created_at: OffsetDateTime::UNIX_EPOCH,
            expires_at: Some(OffsetDateTime::UNIX_EPOCH + time::Duration::days(90)),
            revoked_at: None,
            token_sha256: String::new(),
        }
    }

    #[test]
    fn a_token_reaches_its_scope_only() {
        let (s, now) = (scope(), OffsetDateTime::UNIX_EPOCH + time::Duration::days(1));
        assert!(check(&s, Verb::Read, "billing-db", false, prod(), now).is_ok());
        assert!(check(&s, Verb::Read, "shared-key", false, prod(), now).is_ok());
        let code = |r: Result<(), ApiError>| r.unwrap_err().code;
        assert_eq!(code(check(&s, Verb::Read, "payments-db", false, prod(), now)), ErrorCode::NotFound);
        assert_eq!(code(check(&s, Verb::Read, "billing-db", true, prod(), now)), ErrorCode::NotFound);
        assert_eq!(code(check(&s, Verb::Read, "billing-db", false, dev(), now)), ErrorCode::Forbidden);
        let later = OffsetDateTime::UNIX_EPOCH + time::Duration::days(90);
        assert_eq!(
            code(check(&s, Verb::Read, "billing-db", false, prod(), later)),
            ErrorCode::Unauthenticated
        );
        let revoked = ProgramScope { revoked_at: Some(now), ..scope() };
        assert_eq!(
            code(check(&revoked, Verb::Read, "billing-db", false, prod(), now)),
            ErrorCode::Unauthenticated
        );
        let no_verb = ProgramScope { verbs: vec![], ..scope() };
        assert_eq!(code(check(&no_verb, Verb::Read, "billing-db", false, prod(), now)), ErrorCode::Forbidden);
        // A name is no identity: renamed, `prod` is another environment's
        // name, and the token still reaches its own by id only.
        let by_name_only = ProgramScope { environment_id: None, ..scope() };
        assert_eq!(
            code(check(&by_name_only, Verb::Read, "billing-db", false, prod(), now)),
            ErrorCode::Unauthenticated
        );
    }

    fn allowance(environment: CatalogId, secret: &str, verbs: &[Verb]) -> ProgramAllowance {
        ProgramAllowance {
            agent_id: AgentId::from_uuid(uuid::Uuid::from_u128(1)),
            environment_id: environment,
            environment: "prod".into(),
            secret: secret.into(),
            verbs: verbs.to_vec(),
            created_at: OffsetDateTime::UNIX_EPOCH,
            created_by: "owner@example.com".into(),
        }
    }

    fn registered(secrets: &[&str], verbs: &[Verb]) -> RegisteredToken {
        RegisteredToken {
            id: "0123456789abcdef".into(),
            agent_id: AgentId::from_uuid(uuid::Uuid::from_u128(1)),
            name: "billing-api".into(),
            environment_id: prod(),
            environment: "prod".into(),
            secrets: secrets.iter().map(|s| (*s).to_owned()).collect(),
            verbs: verbs.to_vec(),
            created_at: OffsetDateTime::UNIX_EPOCH,
            expires_at: None,
            revoked_at: None,
        }
    }

    #[test]
    fn a_glob_fits_an_allowance_only_when_all_it_names_is_allowed() {
        assert!(fits("billing-*", "billing-*"));
        assert!(fits("billing-*", "billing-db"));
        assert!(fits("billing-*", "billing-api-*"));
        assert!(fits("*", "anything-*"));
        assert!(!fits("billing-*", "*"));
        assert!(!fits("billing-*", "bill*"));
        assert!(!fits("billing-*", "payments-db"));
        assert!(!fits("billing-db", "billing-*"));
        assert!(!fits("billing-?", "billing-*"), "refused rather than guessed");
    }

    #[test]
    fn programs_write_and_delete_only_inside_an_owners_allowance() {
        let now = OffsetDateTime::UNIX_EPOCH + time::Duration::days(1);
        let allow = [allowance(prod(), "billing-*", &[Verb::Write])];
        // Reads need no allowance; writes need one, per glob and environment.
        assert!(check_registration("edge-1", &registered(&["*"], &[Verb::Read]), &[]).is_ok());
        assert!(check_registration(
            "edge-1",
            &registered(&["billing-*"], &[Verb::Read, Verb::Write]),
            &allow
        )
        .is_ok());
        let err =
            check_registration("edge-1", &registered(&["billing-*"], &[Verb::Delete]), &allow).unwrap_err();
        assert_eq!(err.code, ErrorCode::Forbidden);
        assert!(err.message.contains("allow-programs edge-1"), "{}", err.message);
        assert!(check_registration("edge-1", &registered(&["*"], &[Verb::Write]), &allow).is_err());
        let in_dev = [allowance(dev(), "billing-*", &[Verb::Write])];
        assert!(check_registration("edge-1", &registered(&["billing-*"], &[Verb::Write]), &in_dev).is_err());

        let token = registered(&["billing-*"], &[Verb::Write]);
        let call =
            |t: Option<&RegisteredToken>, name: &str, verb, secret: &str, env, allow: &[ProgramAllowance]| {
                check_registered_call("edge-1", t, name, verb, secret, (env, "prod"), allow, now)
                    .map_err(|e| e.code)
            };
        assert_eq!(call(Some(&token), "billing-api", Verb::Write, "billing-db", prod(), &allow), Ok(()));
        // An invented or revoked token id, or another name: nothing.
        assert_eq!(
            call(None, "billing-api", Verb::Write, "billing-db", prod(), &allow),
            Err(ErrorCode::Unauthenticated)
        );
        let revoked = RegisteredToken { revoked_at: Some(now), ..token.clone() };
        assert_eq!(
            call(Some(&revoked), "billing-api", Verb::Write, "billing-db", prod(), &allow),
            Err(ErrorCode::Unauthenticated)
        );
        assert_eq!(
            call(Some(&token), "other", Verb::Write, "billing-db", prod(), &allow),
            Err(ErrorCode::Unauthenticated)
        );
        // Outside its own scope, or the allowance withdrawn since.
        assert_eq!(
            call(Some(&token), "billing-api", Verb::Delete, "billing-db", prod(), &allow),
            Err(ErrorCode::Forbidden)
        );
        assert_eq!(
            call(Some(&token), "billing-api", Verb::Write, "payments-db", prod(), &allow),
            Err(ErrorCode::NotFound)
        );
        assert_eq!(
            call(Some(&token), "billing-api", Verb::Write, "billing-db", dev(), &allow),
            Err(ErrorCode::Forbidden)
        );
        assert_eq!(
            call(Some(&token), "billing-api", Verb::Write, "billing-db", prod(), &[]),
            Err(ErrorCode::Forbidden)
        );
        assert!(check_allowance("billing-*", &[Verb::Read]).is_err());
        assert!(check_allowance("[", &[Verb::Write]).is_err());
        assert!(check_allowance("billing-*", &[Verb::Write, Verb::Delete]).is_ok());
    }

    #[test]
    fn tokens_have_one_shape() {
        let agent = AgentId::from_uuid(uuid::Uuid::from_u128(0xfeed));
        let secret = "ab".repeat(32);
        let token = format_token(agent, "0123456789abcdef", &secret);
        assert_eq!(parse_token(&token), Some(TokenParts { agent, id: "0123456789abcdef" }));
        let a = agent.as_uuid().simple().to_string();
        for bad in [
            format!("hdp_{a}_0123456789ABCDEF_{secret}"),
            format!("hdp_{a}_0123456789abcde_{secret}"),
            format!("hdp_{a}_0123456789abcdef_abcd"),
            format!("hdp_{a}_0123456789abcdef_{secret}!"),
            format!("hdp_{a}_0123456789abcdef_{secret}_x"),
            format!("hdp_0123_0123456789abcdef_{secret}"),
            format!("hdp_0123456789abcdef_{secret}"),
            format!("xyz_{a}_0123456789abcdef_{secret}"),
            "hdp_".to_owned(),
        ] {
            assert_eq!(parse_token(&bad), None, "{bad}");
        }
    }

    #[test]
    fn lifetimes_parse() {
        assert_eq!(parse_expires("90d").unwrap(), Some(time::Duration::days(90)));
        assert_eq!(parse_expires("12h").unwrap(), Some(time::Duration::hours(12)));
        assert_eq!(parse_expires("never").unwrap(), None);
        for bad in ["", "d", "0d", "90", "90w", "-1d", "1.5d"] {
            assert!(parse_expires(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn new_scopes_are_checked() {
        assert!(check_new("billing-api", "prod", &["billing-*".into()], &[Verb::Read]).is_ok());
        assert!(check_new("Billing", "prod", &["x".into()], &[Verb::Read]).is_err());
        assert!(check_new("billing-api", "prod", &[], &[Verb::Read]).is_err());
        assert!(check_new("billing-api", "prod", &["[".into()], &[Verb::Read]).is_err());
        assert!(check_new("billing-api", "prod", &["x".into()], &[]).is_err());
    }
}
