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
//! every target with the same *shape*: what `decide` hands Cedar (the
//! target with only the ancestors a policy for the action names,
//! `super::observable`), with the target's own id left out unless a
//! policy names it, and the environment. A member is never shared: when it is the
//! target it is also the principal entity, and `resource == principal`
//! tells members apart.

use std::collections::HashMap;

use super::{decide, Action, Decision, OrgPolicies, Principal, Target, TargetKind};

/// What a decision depends on: the named ancestors, and the target's id
/// only when a policy names it (`None` otherwise).
#[derive(Debug, PartialEq, Eq, Hash)]
struct Shape {
    kind: TargetKind,
    id: Option<String>,
    chains: Vec<Vec<(TargetKind, String)>>,
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
        let named = |kind: TargetKind, id: &str| self.policies.names_entity(self.action, kind, id);
        let seen = super::observable(target, named);
        Shape {
            kind: seen.kind,
            id: named(seen.kind, &seen.id).then_some(seen.id),
            chains: seen.chains,
            attrs: seen.attrs,
            environment: environment.map(str::to_owned),
        }
    }
}
