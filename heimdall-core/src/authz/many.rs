//! One action decided over many targets for one principal: the items of a
//! list page. A page of 100 Resources is one decision, not 100, unless the
//! policies tell them apart.
//!
//! Cedar tells two entities of one type apart only by a literal that
//! names one of them (`resource == Heimdall::Resource::"<id>"`,
//! `resource in Heimdall::Domain::"<id>"`), or by their attributes: an id
//! is not an attribute, and no expression turns an entity into a string.
//! Heimdall's targets carry string attributes only, so no expression
//! reaches an ancestor except through a literal. So a decision holds for
//! every target with the same *shape*: its kind, its ancestors' kinds in
//! order, the ids among them (its own included) that a policy for the
//! action names, its attributes and the environment. Ids no policy names
//! are left out of the shape. A member is never shared: when it is the
//! target it is also the principal entity, and `resource == principal`
//! tells members apart.

use std::collections::HashMap;

use super::{decide, Action, Decision, OrgPolicies, Principal, Target, TargetKind};

/// What a decision depends on: the target with the ids no policy names
/// left out (`None`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Shape {
    kind: TargetKind,
    id: Option<String>,
    chains: Vec<Vec<(TargetKind, Option<String>)>>,
    attrs: Vec<(&'static str, String)>,
    environment: Option<String>,
}

/// Decides `action` for `principal` over many targets, each answer the
/// one [`decide`] gives, each distinct shape evaluated once.
#[derive(Debug)]
pub struct ManyDecisions<'a> {
    principal: &'a Principal,
    action: Action,
    policies: &'a OrgPolicies,
    seen: HashMap<Shape, Decision>,
}

impl<'a> ManyDecisions<'a> {
    pub fn new(principal: &'a Principal, action: Action, policies: &'a OrgPolicies) -> Self {
        Self { principal, action, policies, seen: HashMap::new() }
    }

    pub fn decide(&mut self, target: &Target, environment: Option<&str>) -> Decision {
        if target.kind == TargetKind::Member {
            return decide(self.principal, self.action, target, environment, self.policies);
        }
        let shape = self.shape(target, environment);
        if let Some(decision) = self.seen.get(&shape) {
            return decision.clone();
        }
        let decision = decide(self.principal, self.action, target, environment, self.policies);
        self.seen.insert(shape, decision.clone());
        decision
    }

    fn shape(&self, target: &Target, environment: Option<&str>) -> Shape {
        let named = |kind: TargetKind, id: &str| {
            self.policies.names_entity(self.action, kind, id).then(|| id.to_owned())
        };
        Shape {
            kind: target.kind,
            id: named(target.kind, &target.id),
            chains: target
                .chains
                .iter()
                .map(|chain| chain.iter().map(|(kind, id)| (*kind, named(*kind, id))).collect())
                .collect(),
            attrs: target.attrs.clone(),
            environment: environment.map(str::to_owned),
        }
    }
}
