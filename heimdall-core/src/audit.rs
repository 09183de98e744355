//! What an audit event says happened: one closed list, so that every event
//! name the API writes, a notification filter matches and the docs list is
//! one of these (`tests/architecture.rs` keeps literals out of the adapters).

pub mod service;

use crate::domain::CatalogKind;

macro_rules! actions {
    ($($variant:ident => $name:literal,)*) => {
        /// An audit event's action, stored and shown as its dotted name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum AuditAction {
            $($variant,)*
        }

        impl AuditAction {
            /// Every action, in the order the docs list them.
            pub const ALL: &'static [AuditAction] = &[$(AuditAction::$variant,)*];

            /// The stored name: `object.what_happened`.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(AuditAction::$variant => $name,)*
                }
            }
        }
    };
}

actions! {
    AgentCertificateIssued => "agent.certificate_issued",
    AgentCertificateRefused => "agent.certificate_refused",
    AgentEnrolled => "agent.enrolled",
    AgentForgotten => "agent.forgotten",
    AgentNameAllowed => "agent.name_allowed",
    AgentNameDisallowed => "agent.name_disallowed",
    AgentProgramsAllowed => "agent.programs_allowed",
    AgentProgramsDisallowed => "agent.programs_disallowed",
    AgentRegistrationCreated => "agent.registration_created",
    AgentRevoked => "agent.revoked",
    AgentSealedFileRolledBack => "agent.sealed_file_rolled_back",
    CertificateRevoked => "certificate.revoked",
    CloudAccountCreated => "cloud_account.created",
    CloudAccountDeleted => "cloud_account.deleted",
    CloudAccountLinked => "cloud_account.linked",
    CloudAccountUnlinked => "cloud_account.unlinked",
    CloudAccountUpdated => "cloud_account.updated",
    ComponentCreated => "component.created",
    ConsoleSignedIn => "console.signed_in",
    ConsoleSignInLinkCreated => "console.sign_in_link_created",
    ComponentDeleted => "component.deleted",
    ComponentRenamed => "component.renamed",
    DatabaseCreated => "database.created",
    DatabaseDeleted => "database.deleted",
    DatabaseUpdated => "database.updated",
    DatabaseLoginRetired => "database.login_retired",
    DatabaseRotationFailed => "database.rotation_failed",
    DatabaseRotationRequested => "database.rotation_requested",
    DatabaseUserCreated => "database.user_created",
    DatabaseUserDeleted => "database.user_deleted",
    DatabaseUserDeletionRequested => "database.user_deletion_requested",
    DatabaseUserReady => "database.user_ready",
    DatabaseUserRotated => "database.user_rotated",
    DomainCreated => "domain.created",
    DomainDeleted => "domain.deleted",
    DomainRenamed => "domain.renamed",
    EnvironmentAgentAssigned => "environment.agent_assigned",
    EnvironmentAgentUnassigned => "environment.agent_unassigned",
    EnvironmentCreated => "environment.created",
    EnvironmentDeleted => "environment.deleted",
    EnvironmentRenamed => "environment.renamed",
    JobFailed => "job.failed",
    MemberAdded => "member.added",
    MemberCertificateIssued => "member.certificate_issued",
    MemberRemoved => "member.removed",
    MemberRoleChanged => "member.role_changed",
    NotificationCreated => "notification.created",
    NotificationDeleted => "notification.deleted",
    NotificationUpdated => "notification.updated",
    OrganizationBootstrapped => "organization.bootstrapped",
    PolicyCreated => "policy.created",
    PolicyDeleted => "policy.deleted",
    PolicyUpdated => "policy.updated",
    ProgramTokenRegistered => "program_token.registered",
    ProgramTokenRevoked => "program_token.revoked",
    ResourceAbandoned => "resource.abandoned",
    ResourceApproved => "resource.approved",
    ResourceChanged => "resource.changed",
    ResourceCreated => "resource.created",
    ResourceDeleted => "resource.deleted",
    ResourceDriftCheckRequested => "resource.drift_check_requested",
    ResourceDriftCleared => "resource.drift_cleared",
    ResourceDrifted => "resource.drifted",
    ResourceImportRequested => "resource.import_requested",
    ResourcePlanStale => "resource.plan_stale",
    ResourcePlanned => "resource.planned",
    ResourceRefused => "resource.refused",
    ResourceRetried => "resource.retried",
    ResourceUpgraded => "resource.upgraded",
    SchemaCreated => "schema.created",
    SchemaDeleted => "schema.deleted",
    SchemaDeprecated => "schema.deprecated",
    SchemaUndeprecated => "schema.undeprecated",
    SecretAtRisk => "secret.at_risk",
    SecretCreated => "secret.created",
    SecretDeleted => "secret.deleted",
    SecretDeletionStarted => "secret.deletion_started",
    SecretHolderLagging => "secret.holder_lagging",
    SecretReadNotReported => "secret.read_not_reported",
    SecretRecordConflict => "secret.record_conflict",
    SecretSequenceRestarted => "secret.sequence_restarted",
    SecretUpdated => "secret.updated",
    SecretVersionCreated => "secret.version_created",
    SecretVersionDeactivated => "secret.version_deactivated",
    SystemCreated => "system.created",
    SystemDeleted => "system.deleted",
    SystemRenamed => "system.renamed",
    TokenCreated => "token.created",
    TokenRevoked => "token.revoked",
}

/// What happened to a catalog entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CatalogChange {
    Created,
    Renamed,
    Deleted,
}

impl AuditAction {
    /// The action for `change` to an entry of `kind` (`domain.created`, …).
    pub fn catalog(kind: CatalogKind, change: CatalogChange) -> AuditAction {
        use AuditAction as A;
        use CatalogChange as C;
        match (kind, change) {
            (CatalogKind::Domain, C::Created) => A::DomainCreated,
            (CatalogKind::Domain, C::Renamed) => A::DomainRenamed,
            (CatalogKind::Domain, C::Deleted) => A::DomainDeleted,
            (CatalogKind::System, C::Created) => A::SystemCreated,
            (CatalogKind::System, C::Renamed) => A::SystemRenamed,
            (CatalogKind::System, C::Deleted) => A::SystemDeleted,
            (CatalogKind::Component, C::Created) => A::ComponentCreated,
            (CatalogKind::Component, C::Renamed) => A::ComponentRenamed,
            (CatalogKind::Component, C::Deleted) => A::ComponentDeleted,
            (CatalogKind::Environment, C::Created) => A::EnvironmentCreated,
            (CatalogKind::Environment, C::Renamed) => A::EnvironmentRenamed,
            (CatalogKind::Environment, C::Deleted) => A::EnvironmentDeleted,
        }
    }

    /// The action stored under `name`, if it is one of ours.
    pub fn from_name(name: &str) -> Option<AuditAction> {
        AuditAction::ALL.iter().copied().find(|a| a.as_str() == name)
    }

    /// Whether notification channels hear of it (`heimdall_core::notify`).
    pub fn is_notified(self) -> bool {
        matches!(
            self,
            AuditAction::SecretAtRisk
                | AuditAction::SecretHolderLagging
                | AuditAction::ResourceDrifted
                | AuditAction::JobFailed
                | AuditAction::DatabaseRotationFailed
        )
    }
}

impl std::fmt::Display for AuditAction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for AuditAction {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// An event a planner decided on. The adapter gives it an id, a time and
/// its actor, and writes it in the transaction that applies the plan.
#[derive(Clone, Debug, PartialEq)]
pub struct EventPlan {
    pub action: AuditAction,
    /// What it is about: `secret:<id>`, `environment:<id>`.
    pub target: String,
    pub detail: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_dotted_and_round_trip() {
        let mut seen = std::collections::BTreeSet::new();
        for action in AuditAction::ALL {
            let name = action.as_str();
            assert!(seen.insert(name), "{name} twice");
            let (object, what) = name.split_once('.').unwrap();
            assert!(!object.is_empty() && !what.is_empty() && !what.contains('.'), "{name}");
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'.' || b == b'_'), "{name}");
            assert_eq!(AuditAction::from_name(name), Some(*action));
        }
        assert_eq!(AuditAction::from_name("secret.read"), None, "a Cedar action is no event");
    }

    #[test]
    fn every_catalog_change_has_its_own_name() {
        let mut names = std::collections::BTreeSet::new();
        for kind in CatalogKind::ALL {
            for change in [CatalogChange::Created, CatalogChange::Renamed, CatalogChange::Deleted] {
                let name = AuditAction::catalog(kind, change).as_str();
                assert!(name.starts_with(kind.as_str()), "{name}");
                names.insert(name);
            }
        }
        assert_eq!(names.len(), 12);
    }
}
