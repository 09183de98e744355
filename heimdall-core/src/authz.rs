//! Authorization: who may do what, decided with Cedar.
//!
//! The role table (docs/concepts.md, "Who may do what") is written as Cedar `permit` policies
//! ([`DEFAULT_POLICIES`]); an organization adds its own `permit`/`forbid`
//! policies on top. Cedar's semantics give "a `forbid` always wins" and
//! "deny unless something permits". A decision is a pure function of
//! (principal, action, target, environment, organization policies).
//!
//! Every request carries `context.environment` (the empty string when the
//! action is not about an environment), so that a policy testing it never
//! errors. An erroring `forbid` would otherwise be skipped, which is the
//! wrong way to fail.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use cedar_policy::{
    Context, Entities, Entity, EntityId, EntityTypeName, EntityUid, Policy as CedarPolicy,
    PolicyId as CedarPolicyId, PolicySet, Request, RestrictedExpression, Schema, ValidationMode, Validator,
};
use serde::{Deserialize, Serialize};

use crate::domain::CatalogKind;
use crate::domain::{Policy, Role};
use crate::ids::{CatalogId, MemberId, OrgId, PolicyId, ResourceId, SecretId};

mod many;
pub use many::ManyDecisions;

/// The Cedar schema every policy is validated against.
pub const CEDAR_SCHEMA: &str = include_str!("authz/heimdall.cedarschema");

macro_rules! actions {
    ($($variant:ident = $name:literal),+ $(,)?) => {
        /// Everything a person can ask of Heimdall, by its Cedar action name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
        pub enum Action { $($variant),+ }

        impl Action {
            pub const ALL: &'static [Action] = &[$(Action::$variant),+];

            /// The Cedar action id, e.g. `secret.read` in `Heimdall::Action::"secret.read"`.
            pub const fn name(self) -> &'static str {
                match self { $(Action::$variant => $name),+ }
            }
        }
    };
}

actions! {
    CatalogRead = "catalog.read",
    CatalogWrite = "catalog.write",
    MemberRead = "member.read",
    MemberWrite = "member.write",
    PolicyRead = "policy.read",
    PolicyWrite = "policy.write",
    EventRead = "event.read",
    NotificationRead = "notification.read",
    NotificationWrite = "notification.write",
    SchemaRead = "schema.read",
    SchemaWrite = "schema.write",
    ResourceRead = "resource.read",
    ResourceWrite = "resource.write",
    ResourceApprove = "resource.approve",
    ResourceDelete = "resource.delete",
    ResourceAbandon = "resource.abandon",
    JobRead = "job.read",
    CloudAccountRead = "cloud_account.read",
    CloudAccountWrite = "cloud_account.write",
    SecretRead = "secret.read",
    SecretWrite = "secret.write",
    SecretAccessLog = "secret.access_log",
    AgentRead = "agent.read",
    CertificateRead = "certificate.read",
    CertificateRevoke = "certificate.revoke",
    AgentManage = "agent.manage",
    EnvironmentAssignAgent = "environment.assign_agent",
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The role defaults, as Cedar. Ids start with `default:`.
pub const DEFAULT_POLICIES: &[(&str, &str)] = &[
    (
        "default:every-member",
        r#"permit(principal, action in [
            Heimdall::Action::"catalog.read",
            Heimdall::Action::"schema.read",
            Heimdall::Action::"member.read",
            Heimdall::Action::"resource.read",
            Heimdall::Action::"job.read",
            Heimdall::Action::"secret.read"
        ], resource);"#,
    ),
    (
        "default:owner-and-admin",
        r#"permit(principal, action in [
            Heimdall::Action::"catalog.write",
            Heimdall::Action::"schema.write",
            Heimdall::Action::"member.write",
            Heimdall::Action::"policy.read",
            Heimdall::Action::"event.read",
            Heimdall::Action::"notification.read",
            Heimdall::Action::"resource.write",
            Heimdall::Action::"resource.approve",
            Heimdall::Action::"resource.delete",
            Heimdall::Action::"resource.abandon",
            Heimdall::Action::"cloud_account.read",
            Heimdall::Action::"cloud_account.write",
            Heimdall::Action::"secret.write",
            Heimdall::Action::"secret.access_log",
            Heimdall::Action::"agent.read",
            Heimdall::Action::"certificate.read",
            Heimdall::Action::"certificate.revoke"
        ], resource) when { principal.role == "owner" || principal.role == "admin" };"#,
    ),
    (
        "default:personal-owner",
        // A personal secret is its owner's, whatever her role. Only she
        // reaches it (`secrets::reach`); organization `forbid`s still apply.
        r#"permit(principal, action in [
            Heimdall::Action::"secret.read",
            Heimdall::Action::"secret.write",
            Heimdall::Action::"secret.access_log"
        ], resource is Heimdall::Secret) when { resource.owner != "" && resource.owner == principal.id };"#,
    ),
    (
        "default:owner",
        // Policies are owner-only: an admin who could write policies could
        // grant themselves anything the owner keeps.
        r#"permit(principal, action in [
            Heimdall::Action::"policy.write",
            Heimdall::Action::"notification.write",
            Heimdall::Action::"agent.manage",
            Heimdall::Action::"environment.assign_agent"
        ], resource) when { principal.role == "owner" };"#,
    ),
];

/// Kinds of thing an action can be about (Cedar entity types).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    Organization,
    Domain,
    System,
    Component,
    Environment,
    Member,
    Policy,
    Resource,
    Job,
    Secret,
    CloudAccount,
    Agent,
    Schema,
}

impl TargetKind {
    pub fn cedar_type(self) -> &'static str {
        match self {
            TargetKind::Organization => "Heimdall::Organization",
            TargetKind::Domain => "Heimdall::Domain",
            TargetKind::System => "Heimdall::System",
            TargetKind::Component => "Heimdall::Component",
            TargetKind::Environment => "Heimdall::Environment",
            TargetKind::Member => "Heimdall::Member",
            TargetKind::Policy => "Heimdall::Policy",
            TargetKind::Resource => "Heimdall::Resource",
            TargetKind::Job => "Heimdall::Job",
            TargetKind::Secret => "Heimdall::Secret",
            TargetKind::CloudAccount => "Heimdall::CloudAccount",
            TargetKind::Agent => "Heimdall::Agent",
            TargetKind::Schema => "Heimdall::Schema",
        }
    }
}

/// Who is asking. Members are named in policies by email
/// (`principal == Heimdall::Member::"ana@example.com"`); their id is the
/// attribute `principal.id`, which is what ownership compares.
#[derive(Clone, Debug)]
pub struct Principal {
    pub org: OrgId,
    pub id: MemberId,
    pub email: String,
    pub role: Role,
}

/// What the action is about, with its ancestors: one or more chains,
/// each nearest first (a component's system, then domain; a secret has one
/// chain per Component it is linked to). The organization is always the
/// root and is added here, so `resource in Heimdall::Domain::"<id>"` works
/// in policies.
#[derive(Clone, Debug)]
pub struct Target {
    pub kind: TargetKind,
    pub id: String,
    pub chains: Vec<Vec<(TargetKind, String)>>,
    /// String attributes of the target entity (a secret's `owner`).
    pub attrs: Vec<(&'static str, String)>,
}

impl Target {
    pub fn new(kind: TargetKind, id: impl fmt::Display) -> Self {
        Self { kind, id: id.to_string(), chains: Vec::new(), attrs: Vec::new() }
    }

    /// The organization itself, for actions on a collection (list, create).
    pub fn organization(org: OrgId) -> Self {
        Self::new(TargetKind::Organization, org)
    }

    /// Appends the next ancestor to the first chain.
    pub fn with_ancestor(mut self, kind: TargetKind, id: impl fmt::Display) -> Self {
        if self.chains.is_empty() {
            self.chains.push(Vec::new());
        }
        self.chains[0].push((kind, id.to_string()));
        self
    }

    /// Adds a chain of ancestors, nearest first.
    pub fn with_chain(mut self, chain: Vec<(TargetKind, String)>) -> Self {
        if !chain.is_empty() {
            self.chains.push(chain);
        }
        self
    }

    pub fn with_attr(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.attrs.push((name, value.into()));
        self
    }
}

/// Where catalog entries sit, by id: their kind and parent. The API loads
/// it from its store, the Agent from its last sync; targets are built from
/// it here, the same way for both.
#[derive(Clone, Debug, Default)]
pub struct CatalogTree {
    entries: HashMap<CatalogId, (CatalogKind, Option<CatalogId>)>,
}

impl CatalogTree {
    pub fn new(entries: impl IntoIterator<Item = (CatalogId, CatalogKind, Option<CatalogId>)>) -> Self {
        Self { entries: entries.into_iter().map(|(id, kind, parent)| (id, (kind, parent))).collect() }
    }

    /// `id` and its ancestors, nearest first (at most component → system →
    /// domain); an id the tree does not know ends the chain.
    pub fn chain(&self, id: CatalogId) -> Vec<(TargetKind, String)> {
        let mut chain = Vec::new();
        let mut next = Some(id);
        while let Some(id) = next.take() {
            let Some((kind, parent)) = self.entries.get(&id) else { break };
            chain.push((catalog_target_kind(*kind), id.to_string()));
            // A catalog is three levels deep; a cycle in bad data stops here.
            if chain.len() < 4 {
                next = *parent;
            }
        }
        chain
    }
}

pub fn catalog_target_kind(kind: CatalogKind) -> TargetKind {
    match kind {
        CatalogKind::Domain => TargetKind::Domain,
        CatalogKind::System => TargetKind::System,
        CatalogKind::Component => TargetKind::Component,
        CatalogKind::Environment => TargetKind::Environment,
    }
}

/// A secret as policies see it: under each Component it is linked to (so
/// a `forbid` on a Component, System or Domain applies to it), with its
/// personal owner's member id as `resource.owner` (`""` for an
/// organization secret).
pub fn secret_target(
    id: SecretId,
    owner: Option<MemberId>,
    components: &[CatalogId],
    tree: &CatalogTree,
) -> Target {
    let mut target = Target::new(TargetKind::Secret, id)
        .with_attr("owner", owner.map(|o| o.to_string()).unwrap_or_default());
    for component in components {
        target = target.with_chain(tree.chain(*component));
    }
    target
}

/// A Resource (or one about to be created, `None`) under its Component.
pub fn resource_target(id: Option<ResourceId>, component: CatalogId, tree: &CatalogTree) -> Target {
    let id = id.map_or_else(|| "new".to_owned(), |r| r.to_string());
    Target::new(TargetKind::Resource, id).with_chain(tree.chain(component))
}

/// A job, under its Resource and the Resource's Component.
pub fn job_target(
    id: crate::ids::JobId,
    resource: ResourceId,
    component: CatalogId,
    tree: &CatalogTree,
) -> Target {
    let mut chain = vec![(TargetKind::Resource, resource.to_string())];
    chain.extend(tree.chain(component));
    Target::new(TargetKind::Job, id).with_chain(chain)
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow,
    /// No policy permits it.
    NotPermitted,
    /// One or more `forbid` policies match; their ids.
    ForbiddenBy(Vec<String>),
}

impl Decision {
    pub fn is_allowed(&self) -> bool {
        matches!(self, Decision::Allow)
    }
}

/// Where a policy text is wrong: 1-based line and column, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("line {line}, column {column}: {message}")]
pub struct PolicyError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// An organization's own policies, parsed and ready to evaluate, with the
/// built-in defaults already added: a decision evaluates this set as it
/// is, with no copy per decision.
#[derive(Clone, Debug)]
pub struct OrgPolicies {
    /// Every policy, the defaults included.
    set: PolicySet,
    /// Per action, the policies whose scope can name it (an unconstrained
    /// action, that action, or a list holding it): what deciding that
    /// action evaluates. The schema has no action groups, so a policy
    /// scoped to other actions can never apply, and leaving it out changes
    /// no decision, only its cost (200 policies, most about other actions,
    /// were evaluated for every item of a list).
    by_action: HashMap<Action, PolicySet>,
    /// Per action, the entities its policies name by a literal
    /// (`resource in Heimdall::Domain::"<id>"`), as ids by Cedar type: the
    /// only ids a decision can depend on (see [`ManyDecisions`]).
    named_by_action: HashMap<Action, HashMap<String, HashSet<String>>>,
}

impl Default for OrgPolicies {
    /// No policies of the organization's own: the defaults alone.
    fn default() -> Self {
        // Adding the defaults to an empty set cannot clash; if it ever
        // did, an empty set denies everything (fail closed).
        Self::with_defaults(PolicySet::new()).unwrap_or_else(|_| Self {
            set: PolicySet::new(),
            by_action: HashMap::new(),
            named_by_action: HashMap::new(),
        })
    }
}

impl OrgPolicies {
    /// Compiles stored policies. A stored policy that no longer compiles is
    /// an error (the caller fails closed) rather than silently skipped.
    pub fn compile(policies: &[Policy]) -> Result<Self, (PolicyId, PolicyError)> {
        let mut set = PolicySet::new();
        for policy in policies {
            let parsed = parse_policy_text(&policy.text).map_err(|e| (policy.id, e))?;
            for (i, p) in parsed.policies().enumerate() {
                let id = CedarPolicyId::new(format!("{}#{}", policy.id, i));
                set.add(p.new_id(id))
                    .map_err(|e| (policy.id, PolicyError { line: 1, column: 1, message: e.to_string() }))?;
            }
        }
        // Their ids are `<uuid>#<n>`, never a default's `default:…`.
        let first = policies.first().map_or_else(|| PolicyId::from_uuid(uuid::Uuid::nil()), |p| p.id);
        Self::with_defaults(set).map_err(|e| (first, e))
    }

    fn with_defaults(mut set: PolicySet) -> Result<Self, PolicyError> {
        let refused =
            |e: cedar_policy::PolicySetError| PolicyError { line: 1, column: 1, message: e.to_string() };
        for p in &compiled().defaults {
            set.add(p.clone()).map_err(refused)?;
        }
        let (mut by_action, mut named_by_action) = (HashMap::new(), HashMap::new());
        for &action in Action::ALL {
            let Some(this) = uid("Heimdall::Action", action.name()) else { continue };
            let mut subset = PolicySet::new();
            for policy in set.policies() {
                let applies = match policy.action_constraint() {
                    cedar_policy::ActionConstraint::Any => true,
                    cedar_policy::ActionConstraint::Eq(one) => one == this,
                    cedar_policy::ActionConstraint::In(list) => list.contains(&this),
                };
                if applies {
                    subset.add(policy.clone()).map_err(refused)?;
                }
            }
            let mut named: HashMap<String, HashSet<String>> = HashMap::new();
            for literal in subset.policies().flat_map(|p| p.entity_literals()) {
                named
                    .entry(literal.type_name().to_string())
                    .or_default()
                    .insert(literal.id().unescaped().to_owned());
            }
            named_by_action.insert(action, named);
            by_action.insert(action, subset);
        }
        Ok(Self { set, by_action, named_by_action })
    }

    /// Whether a policy that deciding `action` evaluates names the entity
    /// `kind` `id` by a literal. An action not in the table (none is)
    /// counts as naming every entity.
    pub fn names_entity(&self, action: Action, kind: TargetKind, id: &str) -> bool {
        self.named_by_action
            .get(&action)
            .is_none_or(|named| named.get(kind.cedar_type()).is_some_and(|ids| ids.contains(id)))
    }
}

struct Compiled {
    schema: Schema,
    defaults: Vec<CedarPolicy>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        // Both texts are constants of this crate; the unit tests parse them,
        // so a failure here is a build defect, not a runtime condition.
        #[allow(clippy::expect_used)]
        let (schema, _warnings) =
            Schema::from_cedarschema_str(CEDAR_SCHEMA).expect("built-in Cedar schema parses");
        let defaults = DEFAULT_POLICIES
            .iter()
            .map(|(id, text)| {
                #[allow(clippy::expect_used)]
                CedarPolicy::parse(Some(CedarPolicyId::new(*id)), text)
                    .expect("built-in default policy parses")
            })
            .collect();
        Compiled { schema, defaults }
    })
}

/// Parses and validates policy text written by a person: Cedar syntax, no
/// templates, at least one policy, and every entity type, action and
/// attribute known to Heimdall's schema (strict mode), so that a misspelt
/// action in a `forbid` is refused instead of silently never applying.
pub fn validate_policy_text(text: &str) -> Result<usize, PolicyError> {
    let set = parse_policy_text(text)?;
    let count = set.policies().count();
    let validator = Validator::new(compiled().schema.clone());
    let result = validator.validate(&set, ValidationMode::Strict);
    if let Some(err) = result.validation_errors().next() {
        return Err(locate(text, err, err.to_string()));
    }
    Ok(count)
}

fn parse_policy_text(text: &str) -> Result<PolicySet, PolicyError> {
    let set = PolicySet::from_str(text).map_err(|e| locate(text, &e, e.to_string()))?;
    if set.templates().next().is_some() {
        return Err(PolicyError {
            line: 1,
            column: 1,
            message: "policy templates (?principal, ?resource) are not supported".into(),
        });
    }
    if set.policies().next().is_none() {
        return Err(PolicyError {
            line: 1,
            column: 1,
            message: "no policy found: expected a `permit` or `forbid` statement".into(),
        });
    }
    Ok(set)
}

fn locate(text: &str, diag: &dyn miette::Diagnostic, message: String) -> PolicyError {
    let offset = diag.labels().and_then(|mut labels| labels.next()).map(|l| l.offset()).unwrap_or(0);
    let (line, column) = line_column(text, offset);
    PolicyError { line, column, message }
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// Decides whether `principal` may do `action` on `target`.
pub fn decide(
    principal: &Principal,
    action: Action,
    target: &Target,
    environment: Option<&str>,
    org_policies: &OrgPolicies,
) -> Decision {
    let set = org_policies.by_action.get(&action).unwrap_or(&org_policies.set);
    let seen = observable(target, |kind, id| org_policies.names_entity(action, kind, id));
    authorize(&Who::from(principal), action, &seen, environment, set)
}

/// `target` as the policies can see it: each chain keeps only the
/// ancestors `named` (some policy names them), each linked to the next
/// one kept. Cedar reaches an ancestor only through a literal that names
/// it (`resource in Heimdall::Domain::"<id>"`), and `in` is transitive, so
/// every answer stays the same; an entity fewer is less of the transitive
/// closure Cedar computes for every request (about half of a decision).
fn observable(target: &Target, named: impl Fn(TargetKind, &str) -> bool) -> Target {
    Target {
        kind: target.kind,
        id: target.id.clone(),
        chains: target
            .chains
            .iter()
            .map(|chain| chain.iter().filter(|(kind, id)| named(*kind, id)).cloned().collect::<Vec<_>>())
            .filter(|chain| !chain.is_empty())
            .collect(),
        attrs: target.attrs.clone(),
    }
}

fn authorize(
    principal: &Who<'_>,
    action: Action,
    target: &Target,
    environment: Option<&str>,
    set: &PolicySet,
) -> Decision {
    let Some((request, entities)) = build_request(principal, action, target, environment) else {
        return Decision::NotPermitted;
    };
    let response = cedar_policy::Authorizer::new().is_authorized(&request, set, &entities);
    match response.decision() {
        cedar_policy::Decision::Allow => Decision::Allow,
        cedar_policy::Decision::Deny => {
            let mut forbids: Vec<String> = response
                .diagnostics()
                .reason()
                .filter(|id| set.policy(id).is_some_and(|p| p.effect() == cedar_policy::Effect::Forbid))
                .map(|id| id.to_string())
                .collect();
            // Cedar's reasons come in no fixed order; a message should not change.
            forbids.sort();
            if forbids.is_empty() {
                Decision::NotPermitted
            } else {
                Decision::ForbiddenBy(forbids)
            }
        }
    }
}

/// The organization's `forbid` policies that refuse a program (by its
/// token's id and its accessor, `program NAME@AGENT`) this action. Its
/// token's scope is what permits (`program::check`); no `permit` policy
/// applies to it. Program has Member's attributes, so every policy that
/// validates evaluates for it too.
pub fn forbids_program(
    org: OrgId,
    token_id: &str,
    accessor: &str,
    action: Action,
    target: &Target,
    environment: Option<&str>,
    org_policies: &OrgPolicies,
) -> Result<(), Vec<String>> {
    let who =
        Who { org, kind: "Heimdall::Program", id: token_id.to_owned(), email: accessor, role: "program" };
    // Forbids only: the permits are taken out, and one that always permits
    // stands in, so that the answer is Deny exactly when a forbid matched.
    let mut set = PolicySet::new();
    for policy in org_policies.set.policies().filter(|p| p.effect() == cedar_policy::Effect::Forbid) {
        set.add(policy.clone()).map_err(|e| vec![e.to_string()])?;
    }
    let always = cedar_policy::Policy::parse(
        Some(cedar_policy::PolicyId::new("program-scope")),
        "permit(principal, action, resource);",
    )
    .map_err(|e| vec![e.to_string()])?;
    set.add(always).map_err(|e| vec![e.to_string()])?;
    match authorize(&who, action, target, environment, &set) {
        Decision::Allow => Ok(()),
        Decision::ForbiddenBy(ids) => Err(ids),
        // Only if the request could not be built: refuse.
        Decision::NotPermitted => Err(vec!["(no request could be built)".to_owned()]),
    }
}

/// An action asked without naming an environment, over what lives in
/// environments (a secret's versions, its access log, a list of
/// Resources): decided once per environment, so an environment-scoped
/// `forbid` removes what it forbids instead of being skipped. Returns the
/// environments among `environments` where the action is allowed.
pub fn allowed_environments<'a>(
    principal: &Principal,
    action: Action,
    target: &Target,
    environments: impl IntoIterator<Item = &'a str>,
    org_policies: &OrgPolicies,
) -> Vec<&'a str> {
    let mut allowed: Vec<&'a str> = Vec::new();
    for env in environments {
        if !allowed.contains(&env) && decide(principal, action, target, Some(env), org_policies).is_allowed()
        {
            allowed.push(env);
        }
    }
    allowed
}

fn uid(type_name: &str, id: &str) -> Option<EntityUid> {
    let type_name = EntityTypeName::from_str(type_name).ok()?;
    Some(EntityUid::from_type_name_and_id(type_name, EntityId::new(id)))
}

/// The principal of a Cedar request: a member, or a program.
struct Who<'a> {
    org: OrgId,
    kind: &'static str,
    id: String,
    email: &'a str,
    role: &'a str,
}

impl<'a> From<&'a Principal> for Who<'a> {
    fn from(p: &'a Principal) -> Self {
        Who {
            org: p.org,
            kind: TargetKind::Member.cedar_type(),
            id: p.id.to_string(),
            email: &p.email,
            role: p.role.as_str(),
        }
    }
}

fn build_request(
    principal: &Who<'_>,
    action: Action,
    target: &Target,
    environment: Option<&str>,
) -> Option<(Request, Entities)> {
    let compiled = compiled();
    let org_uid = uid(TargetKind::Organization.cedar_type(), &principal.org.to_string())?;

    let principal_uid = uid(principal.kind, principal.email)?;
    let attrs = HashMap::from([
        ("id".to_owned(), RestrictedExpression::new_string(principal.id.clone())),
        ("email".to_owned(), RestrictedExpression::new_string(principal.email.to_owned())),
        ("role".to_owned(), RestrictedExpression::new_string(principal.role.to_owned())),
    ]);
    let principal_entity =
        Entity::new(principal_uid.clone(), attrs, HashSet::from([org_uid.clone()])).ok()?;

    // The target, then each chain of ancestors, each pointing at the next;
    // the last of each at the organization. One entity per uid, its
    // parents merged (a system reached through two components).
    let resource_uid = uid(target.kind.cedar_type(), &target.id)?;
    let mut parents: Vec<(EntityUid, HashSet<EntityUid>)> = Vec::new();
    let mut link = |child: &EntityUid, parent: EntityUid| match parents.iter_mut().find(|(u, _)| u == child) {
        Some((_, set)) => {
            set.insert(parent);
        }
        None => parents.push((child.clone(), HashSet::from([parent]))),
    };
    if resource_uid != org_uid {
        if target.chains.is_empty() {
            link(&resource_uid, org_uid.clone());
        }
        for chain in &target.chains {
            let mut child = resource_uid.clone();
            for (kind, id) in chain {
                let next = uid(kind.cedar_type(), id)?;
                link(&child, next.clone());
                child = next;
            }
            link(&child, org_uid.clone());
        }
    }
    let mut entities = vec![principal_entity, Entity::new_no_attrs(org_uid.clone(), HashSet::new())];
    let target_attrs: HashMap<String, RestrictedExpression> = target
        .attrs
        .iter()
        .map(|(name, value)| ((*name).to_owned(), RestrictedExpression::new_string(value.clone())))
        .collect();
    for (entity_uid, parent_set) in parents {
        let entity = if entity_uid == resource_uid && !target_attrs.is_empty() {
            Entity::new(entity_uid, target_attrs.clone(), parent_set).ok()?
        } else {
            Entity::new_no_attrs(entity_uid, parent_set)
        };
        entities.push(entity);
    }
    // A member being the target (member.write on Ana) is also the principal
    // entity type; keep one entity per uid.
    let mut seen = HashSet::new();
    entities.retain(|e| seen.insert(e.uid()));
    let entities = Entities::from_entities(entities, None).ok()?;

    let action_uid = uid("Heimdall::Action", action.name())?;
    let context = Context::from_pairs([(
        "environment".to_owned(),
        RestrictedExpression::new_string(environment.unwrap_or_default().to_owned()),
    )])
    .ok()?;
    let request =
        Request::new(principal_uid, action_uid, resource_uid, context, Some(&compiled.schema)).ok()?;
    Some((request, entities))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deciding over the action's share of the policies answers exactly as
    /// over all of them, for every action, role and environment, with
    /// policies scoped to one action, to a list, and to any.
    #[test]
    fn each_action_decides_over_its_policies_as_over_all() {
        let texts = [
            r#"forbid (principal, action == Heimdall::Action::"secret.read", resource) when { context.environment == "prod" };"#,
            r#"forbid (principal, action in [Heimdall::Action::"catalog.write", Heimdall::Action::"job.read"], resource) unless { principal.role == "owner" };"#,
            r#"forbid (principal, action, resource) when { context.environment == "frozen" };"#,
            r#"permit (principal, action == Heimdall::Action::"resource.approve", resource) when { principal.role == "member" };"#,
        ];
        let stored: Vec<Policy> = texts
            .iter()
            .map(|text| {
                serde_json::from_value(serde_json::json!({
                    "id": uuid::Uuid::new_v4(), "org_id": uuid::Uuid::nil(), "name": "p", "text": text,
                    "created_at": "2026-12-01T00:00:00Z", "created_by": "owner@example.com",
                }))
                .unwrap()
            })
            .collect();
        let policies = OrgPolicies::compile(&stored).unwrap();
        let org = OrgId::from_uuid(uuid::Uuid::new_v4());
        let mut smaller = 0;
        for role in [Role::Owner, Role::Admin, Role::Member] {
            let principal = Principal {
                org,
                id: MemberId::from_uuid(uuid::Uuid::new_v4()),
                email: "a@b.co".into(),
                role,
            };
            for &action in Action::ALL {
                let share = &policies.by_action[&action];
                smaller += usize::from(share.policies().count() < policies.set.policies().count());
                for environment in [None, Some("dev"), Some("prod"), Some("frozen")] {
                    let target = Target::organization(org);
                    let who = Who::from(&principal);
                    assert_eq!(
                        authorize(&who, action, &target, environment, share),
                        authorize(&who, action, &target, environment, &policies.set),
                        "{role:?} {action:?} {environment:?}"
                    );
                }
            }
        }
        assert!(smaller > 0, "no action had a smaller share");
    }

    /// Leaving out the ancestors no policy names changes no decision:
    /// `decide` (which does) answers as the whole target over every
    /// policy, with policies naming a Domain, a System, a Component and a
    /// Resource, for Resources, jobs and secrets linked under two chains.
    #[test]
    fn ancestors_no_policy_names_change_no_decision() {
        let id = |n: u128| CatalogId::from_uuid(uuid::Uuid::from_u128(n));
        let org = OrgId::from_uuid(uuid::Uuid::from_u128(7));
        let tree = CatalogTree::new([
            (id(1), CatalogKind::Domain, None),
            (id(2), CatalogKind::System, Some(id(1))),
            (id(3), CatalogKind::Component, Some(id(2))),
            (id(4), CatalogKind::Component, Some(id(2))),
            (id(11), CatalogKind::Domain, None),
            (id(12), CatalogKind::System, Some(id(11))),
            (id(13), CatalogKind::Component, Some(id(12))),
        ]);
        let resource = |n: u128| ResourceId::from_uuid(uuid::Uuid::from_u128(100 + n));
        let texts = [
            format!(
                r#"forbid (principal, action, resource in Heimdall::Domain::"{}") when {{ context.environment == "prod" }};"#,
                id(11)
            ),
            format!(
                r#"forbid (principal, action == Heimdall::Action::"resource.read", resource in Heimdall::System::"{}") unless {{ principal.role == "owner" }};"#,
                id(2)
            ),
            format!(
                r#"permit (principal, action == Heimdall::Action::"resource.delete", resource) when {{ resource in Heimdall::Component::"{}" }};"#,
                id(4)
            ),
            format!(
                r#"forbid (principal, action, resource) when {{ resource in Heimdall::Resource::"{}" && context.environment == "dev" }};"#,
                resource(1)
            ),
        ];
        let stored: Vec<Policy> = texts
            .iter()
            .map(|text| {
                serde_json::from_value(serde_json::json!({
                    "id": uuid::Uuid::new_v4(), "org_id": org, "name": "p", "text": text,
                    "created_at": "2026-12-01T00:00:00Z", "created_by": "owner@example.com",
                }))
                .unwrap()
            })
            .collect();
        let policies = OrgPolicies::compile(&stored).unwrap();
        let mut targets = Vec::new();
        for (n, component) in [id(3), id(4), id(13)].into_iter().enumerate() {
            let r = resource(n as u128);
            targets.push(resource_target(Some(r), component, &tree));
            targets.push(job_target(
                crate::ids::JobId::from_uuid(uuid::Uuid::from_u128(200 + n as u128)),
                r,
                component,
                &tree,
            ));
            let secret = SecretId::from_uuid(uuid::Uuid::from_u128(300 + n as u128));
            targets.push(secret_target(secret, None, &[component, id(13)], &tree));
        }
        let (mut allowed, mut denied) = (0, 0);
        for role in [Role::Owner, Role::Admin, Role::Member] {
            let principal = Principal {
                org,
                id: MemberId::from_uuid(uuid::Uuid::from_u128(9)),
                email: "a@b.co".into(),
                role,
            };
            for &action in Action::ALL {
                for target in &targets {
                    for environment in [None, Some("dev"), Some("prod")] {
                        let whole =
                            authorize(&Who::from(&principal), action, target, environment, &policies.set);
                        assert_eq!(
                            decide(&principal, action, target, environment, &policies),
                            whole,
                            "{role:?} {action:?} {environment:?} {target:?}"
                        );
                        if whole.is_allowed() {
                            allowed += 1
                        } else {
                            denied += 1
                        }
                    }
                }
            }
        }
        assert!(allowed > 0 && denied > 0);
    }

    #[test]
    fn builtins_parse_and_validate() {
        let _ = compiled();
        for (id, text) in DEFAULT_POLICIES {
            validate_policy_text(text).unwrap_or_else(|e| panic!("{id}: {e}"));
        }
    }

    #[test]
    fn parse_error_has_a_position() {
        let err =
            validate_policy_text("permit(principal, action, resource);\nforbid(principal action, resource);")
                .unwrap_err();
        assert_eq!(err.line, 2, "{err:?}");
        assert!(err.column > 1, "{err:?}");
    }

    #[test]
    fn unknown_action_is_refused() {
        let err = validate_policy_text(
            r#"forbid(principal, action == Heimdall::Action::"secret.raed", resource);"#,
        )
        .unwrap_err();
        assert!(err.message.contains("secret.raed"), "{err:?}");
    }

    #[test]
    fn programs_meet_forbids_but_no_permit() {
        let org = OrgId::from_uuid(uuid::Uuid::from_u128(1));
        let stored = |text: &str| Policy {
            id: PolicyId::from_uuid(uuid::Uuid::from_u128(2)),
            org_id: org,
            name: "p".into(),
            description: String::new(),
            text: text.into(),
            created_at: time::OffsetDateTime::UNIX_EPOCH,
            created_by: "ana@example.com".into(),
            version: 1,
            updated_at: None,
            updated_by: None,
        };
        let tree = CatalogTree::new(std::iter::empty());
        let target = secret_target(SecretId::from_uuid(uuid::Uuid::from_u128(3)), None, &[], &tree);
        let ask = |policies: &OrgPolicies, env| {
            forbids_program(
                org,
                "0123456789abcdef",
                "program billing-api@a1",
                Action::SecretRead,
                &target,
                Some(env),
                policies,
            )
        };
        // Only the defaults: they permit members, which a program is not; its scope permits.
        let none = OrgPolicies::compile(&[]).unwrap();
        assert_eq!(ask(&none, "prod"), Ok(()));
        let prod = OrgPolicies::compile(&[stored(
            r#"forbid(principal, action == Heimdall::Action::"secret.read", resource)
               when { context.environment == "prod" && principal.role != "owner" };"#,
        )])
        .unwrap();
        assert!(ask(&prod, "prod").is_err());
        assert_eq!(ask(&prod, "dev"), Ok(()));
        let programs = OrgPolicies::compile(&[stored(
            r#"forbid(principal is Heimdall::Program, action, resource) when { principal.email like "*billing*" };"#,
        )])
        .unwrap();
        assert!(ask(&programs, "dev").is_err());
    }

    #[test]
    fn line_column_counts_chars() {
        assert_eq!(line_column("ab\ncd", 4), (2, 2));
        assert_eq!(line_column("ab", 0), (1, 1));
    }
}
