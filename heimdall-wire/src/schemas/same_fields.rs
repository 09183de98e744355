//! Each schema here names exactly the fields (or variants) of its core
//! type: one exhaustive pattern over both per type, so a field added to
//! or removed from either stops the build until both say the same.
#![allow(dead_code)]

fn access_record(x: heimdall_core::access::AccessRecord, y: super::AccessRecord) {
    let heimdall_core::access::AccessRecord {
        seq: _,
        accessor: _,
        at: _,
        secret: _,
        environment: _,
        version: _,
        from: _,
    } = x;
    let super::AccessRecord { seq: _, accessor: _, at: _, secret: _, environment: _, version: _, from: _ } =
        y;
}

fn access_log_entry(x: heimdall_core::access::AccessLogEntry, y: super::AccessLogEntry) {
    let heimdall_core::access::AccessLogEntry {
        accessed_at: _,
        accessor: _,
        environment: _,
        version: _,
        served_by: _,
        served_by_id: _,
        from: _,
        reads: _,
    } = x;
    let super::AccessLogEntry {
        accessed_at: _,
        accessor: _,
        environment: _,
        version: _,
        served_by: _,
        served_by_id: _,
        from: _,
        reads: _,
    } = y;
}

fn access_log_cursor(x: heimdall_core::access::AccessLogCursor, y: super::AccessLogCursor) {
    let heimdall_core::access::AccessLogCursor {
        second: _,
        accessor: _,
        environment: _,
        version: _,
        agent: _,
        from: _,
    } = x;
    let super::AccessLogCursor { second: _, accessor: _, environment: _, version: _, agent: _, from: _ } = y;
}

fn create_cloud_account(x: heimdall_core::accounts::CreateCloudAccount, y: super::CreateCloudAccount) {
    let heimdall_core::accounts::CreateCloudAccount {
        name: _,
        provider: _,
        region: _,
        state_bucket: _,
        state_endpoint: _,
        state_backend: _,
        state_storage_account: _,
        auth: _,
        drift_check_every: _,
    } = x;
    let super::CreateCloudAccount {
        name: _,
        provider: _,
        region: _,
        state_bucket: _,
        state_endpoint: _,
        state_backend: _,
        state_storage_account: _,
        auth: _,
        drift_check_every: _,
    } = y;
}

fn update_cloud_account(x: heimdall_core::accounts::UpdateCloudAccount, y: super::UpdateCloudAccount) {
    let heimdall_core::accounts::UpdateCloudAccount {
        region: _,
        auth: _,
        state_bucket: _,
        state_endpoint: _,
        state_storage_account: _,
        drift_check_every: _,
    } = x;
    let super::UpdateCloudAccount {
        region: _,
        auth: _,
        state_bucket: _,
        state_endpoint: _,
        state_storage_account: _,
        drift_check_every: _,
    } = y;
}

fn mark(x: heimdall_core::at_risk::Mark, y: super::Mark) {
    let heimdall_core::at_risk::Mark { secret: _, environment: _, member: _, email: _, versions: _ } = x;
    let super::Mark { secret: _, environment: _, member: _, email: _, versions: _ } = y;
}

fn job_credentials(x: heimdall_core::credentials::JobCredentials, y: super::JobCredentials) {
    match x {
        heimdall_core::credentials::JobCredentials::Aws { .. }
        | heimdall_core::credentials::JobCredentials::IdentityToken { .. } => {}
    }
    match y {
        super::JobCredentials::Aws { .. } | super::JobCredentials::IdentityToken { .. } => {}
    }
}

fn current_version(x: heimdall_core::current::CurrentVersion, y: super::CurrentVersion) {
    let heimdall_core::current::CurrentVersion { secret: _, environment: _, version: _ } = x;
    let super::CurrentVersion { secret: _, environment: _, version: _ } = y;
}

fn no_current(x: heimdall_core::current_delta::NoCurrent, y: super::NoCurrent) {
    let heimdall_core::current_delta::NoCurrent { secret: _, environment: _ } = x;
    let super::NoCurrent { secret: _, environment: _ } = y;
}

fn update_database(x: heimdall_core::dbusers::UpdateDatabase, y: super::UpdateDatabase) {
    let heimdall_core::dbusers::UpdateDatabase { host: _, port: _, tls: _, ca_pem: _, admin_secret: _ } = x;
    let super::UpdateDatabase { host: _, port: _, tls: _, ca_pem: _, admin_secret: _ } = y;
}

fn engine(x: heimdall_core::dbusers::Engine, y: super::Engine) {
    match x {
        heimdall_core::dbusers::Engine::Postgres | heimdall_core::dbusers::Engine::Mariadb => {}
    }
    match y {
        super::Engine::Postgres | super::Engine::Mariadb => {}
    }
}

fn credential(x: heimdall_core::dbusers::Credential, y: super::Credential) {
    let heimdall_core::dbusers::Credential {
        engine: _,
        username: _,
        password: _,
        host: _,
        port: _,
        database: _,
    } = x;
    let super::Credential { engine: _, username: _, password: _, host: _, port: _, database: _ } = y;
}

fn database(x: heimdall_core::dbusers::Database, y: super::Database) {
    let heimdall_core::dbusers::Database {
        id: _,
        org_id: _,
        name: _,
        engine: _,
        host: _,
        port: _,
        database: _,
        environment_id: _,
        environment: _,
        admin_secret: _,
        tls: _,
        ca_pem: _,
        created_at: _,
        created_by: _,
    } = x;
    let super::Database {
        id: _,
        org_id: _,
        name: _,
        engine: _,
        host: _,
        port: _,
        database: _,
        environment_id: _,
        environment: _,
        admin_secret: _,
        tls: _,
        ca_pem: _,
        created_at: _,
        created_by: _,
    } = y;
}

fn tls_mode(x: heimdall_core::dbusers::TlsMode, y: super::TlsMode) {
    match x {
        heimdall_core::dbusers::TlsMode::VerifyFull | heimdall_core::dbusers::TlsMode::Disable => {}
    }
    match y {
        super::TlsMode::VerifyFull | super::TlsMode::Disable => {}
    }
}

fn service_user(x: heimdall_core::dbusers::ServiceUser, y: super::ServiceUser) {
    let heimdall_core::dbusers::ServiceUser {
        id: _,
        org_id: _,
        database_id: _,
        database: _,
        name: _,
        secret: _,
        secret_id: _,
        rotate_every_seconds: _,
        grace_seconds: _,
        grants: _,
        current_version: _,
        pending_version: _,
        retiring_version: _,
        grace_until: _,
        last_rotated_at: _,
        next_rotation_at: _,
        rotate_requested: _,
        retry_at: _,
        last_error: _,
        created_at: _,
        created_by: _,
        created_by_id: _,
        drop_after: _,
        deleted_by: _,
        deleted_by_id: _,
        lease_id: _,
    } = x;
    let super::ServiceUser {
        id: _,
        org_id: _,
        database_id: _,
        database: _,
        name: _,
        secret: _,
        secret_id: _,
        rotate_every_seconds: _,
        grace_seconds: _,
        grants: _,
        current_version: _,
        pending_version: _,
        retiring_version: _,
        grace_until: _,
        last_rotated_at: _,
        next_rotation_at: _,
        rotate_requested: _,
        retry_at: _,
        last_error: _,
        created_at: _,
        created_by: _,
        created_by_id: _,
        drop_after: _,
        deleted_by: _,
        deleted_by_id: _,
        lease_id: _,
    } = y;
}

fn task_kind(x: heimdall_core::dbusers::TaskKind, y: super::TaskKind) {
    match x {
        heimdall_core::dbusers::TaskKind::Create
        | heimdall_core::dbusers::TaskKind::Rotate
        | heimdall_core::dbusers::TaskKind::Retire
        | heimdall_core::dbusers::TaskKind::Drop => {}
    }
    match y {
        super::TaskKind::Create
        | super::TaskKind::Rotate
        | super::TaskKind::Retire
        | super::TaskKind::Drop => {}
    }
}

fn phase(x: heimdall_core::dbusers::Phase, y: super::Phase) {
    match x {
        heimdall_core::dbusers::Phase::Idle { .. }
        | heimdall_core::dbusers::Phase::Pending { .. }
        | heimdall_core::dbusers::Phase::Altered { .. } => {}
    }
    match y {
        super::Phase::Idle { .. } | super::Phase::Pending { .. } | super::Phase::Altered { .. } => {}
    }
}

fn lifecycle(x: heimdall_core::deletion::Lifecycle, y: super::Lifecycle) {
    match x {
        heimdall_core::deletion::Lifecycle::Active
        | heimdall_core::deletion::Lifecycle::Deleting
        | heimdall_core::deletion::Lifecycle::Deleted => {}
    }
    match y {
        super::Lifecycle::Active | super::Lifecycle::Deleting | super::Lifecycle::Deleted => {}
    }
}

fn organization(x: heimdall_core::domain::Organization, y: super::Organization) {
    let heimdall_core::domain::Organization { id: _, name: _, created_at: _ } = x;
    let super::Organization { id: _, name: _, created_at: _ } = y;
}

fn role(x: heimdall_core::domain::Role, y: super::Role) {
    match x {
        heimdall_core::domain::Role::Owner
        | heimdall_core::domain::Role::Admin
        | heimdall_core::domain::Role::Member => {}
    }
    match y {
        super::Role::Owner | super::Role::Admin | super::Role::Member => {}
    }
}

fn member(x: heimdall_core::domain::Member, y: super::Member) {
    let heimdall_core::domain::Member { id: _, org_id: _, email: _, role: _, created_at: _ } = x;
    let super::Member { id: _, org_id: _, email: _, role: _, created_at: _ } = y;
}

fn token_info(x: heimdall_core::domain::TokenInfo, y: super::TokenInfo) {
    let heimdall_core::domain::TokenInfo {
        id: _,
        member_id: _,
        name: _,
        created_at: _,
        revoked_at: _,
        expires_at: _,
    } = x;
    let super::TokenInfo { id: _, member_id: _, name: _, created_at: _, revoked_at: _, expires_at: _ } = y;
}

fn catalog_kind(x: heimdall_core::domain::CatalogKind, y: super::CatalogKind) {
    match x {
        heimdall_core::domain::CatalogKind::Domain
        | heimdall_core::domain::CatalogKind::System
        | heimdall_core::domain::CatalogKind::Component
        | heimdall_core::domain::CatalogKind::Environment => {}
    }
    match y {
        super::CatalogKind::Domain
        | super::CatalogKind::System
        | super::CatalogKind::Component
        | super::CatalogKind::Environment => {}
    }
}

fn catalog_entry(x: heimdall_core::domain::CatalogEntry, y: super::CatalogEntry) {
    let heimdall_core::domain::CatalogEntry {
        id: _,
        org_id: _,
        kind: _,
        name: _,
        description: _,
        parent_id: _,
        created_at: _,
        created_by: _,
    } = x;
    let super::CatalogEntry {
        id: _,
        org_id: _,
        kind: _,
        name: _,
        description: _,
        parent_id: _,
        created_at: _,
        created_by: _,
    } = y;
}

fn policy(x: heimdall_core::domain::Policy, y: super::Policy) {
    let heimdall_core::domain::Policy {
        id: _,
        org_id: _,
        name: _,
        description: _,
        text: _,
        version: _,
        created_at: _,
        created_by: _,
        updated_at: _,
        updated_by: _,
    } = x;
    let super::Policy {
        id: _,
        org_id: _,
        name: _,
        description: _,
        text: _,
        version: _,
        created_at: _,
        created_by: _,
        updated_at: _,
        updated_by: _,
    } = y;
}

fn policy_version(x: heimdall_core::domain::PolicyVersion, y: super::PolicyVersion) {
    let heimdall_core::domain::PolicyVersion {
        version: _,
        name: _,
        description: _,
        text: _,
        written_at: _,
        written_by: _,
    } = x;
    let super::PolicyVersion { version: _, name: _, description: _, text: _, written_at: _, written_by: _ } =
        y;
}

fn audit_event(x: heimdall_core::domain::AuditEvent, y: super::AuditEvent) {
    let heimdall_core::domain::AuditEvent {
        id: _,
        org_id: _,
        at: _,
        actor: _,
        action: _,
        target: _,
        target_name: _,
        detail: _,
    } = x;
    let super::AuditEvent {
        id: _,
        org_id: _,
        at: _,
        actor: _,
        action: _,
        target: _,
        target_name: _,
        detail: _,
    } = y;
}

fn field_error(x: heimdall_core::error::FieldError, y: super::FieldError) {
    let heimdall_core::error::FieldError { path: _, rule: _ } = x;
    let super::FieldError { path: _, rule: _ } = y;
}

fn api_error(x: heimdall_core::error::ApiError, y: super::ApiError) {
    let heimdall_core::error::ApiError { code: _, message: _, fields: _ } = x;
    let super::ApiError { code: _, message: _, fields: _ } = y;
}

fn export_file(x: heimdall_core::export::ExportFile, y: super::ExportFile) {
    let heimdall_core::export::ExportFile { path: _, content: _ } = x;
    let super::ExportFile { path: _, content: _ } = y;
}

fn export_package(x: heimdall_core::export::ExportPackage, y: super::ExportPackage) {
    let heimdall_core::export::ExportPackage { resource_id: _, revision: _, files: _ } = x;
    let super::ExportPackage { resource_id: _, revision: _, files: _ } = y;
}

fn write_grant_claims(x: heimdall_core::grant::WriteGrantClaims, y: super::WriteGrantClaims) {
    let heimdall_core::grant::WriteGrantClaims {
        grant_id: _,
        org: _,
        secret_id: _,
        secret: _,
        environment_id: _,
        environment: _,
        version: _,
        agent: _,
        issued_by: _,
        issued_to: _,
        owner_keys: _,
        issued_at: _,
        expires_at: _,
    } = x;
    let super::WriteGrantClaims {
        grant_id: _,
        org: _,
        secret_id: _,
        secret: _,
        environment_id: _,
        environment: _,
        version: _,
        agent: _,
        issued_by: _,
        issued_to: _,
        owner_keys: _,
        issued_at: _,
        expires_at: _,
    } = y;
}

fn grant_writer(x: heimdall_core::grant::GrantWriter, y: super::GrantWriter) {
    match x {
        heimdall_core::grant::GrantWriter::Member(..) | heimdall_core::grant::GrantWriter::Program(..) => {}
    }
    match y {
        super::GrantWriter::Member(..) | super::GrantWriter::Program(..) => {}
    }
}

fn plan_summary(x: heimdall_core::import::PlanSummary, y: super::PlanSummary) {
    let heimdall_core::import::PlanSummary { add: _, change: _, remove: _, import: _, changes: _ } = x;
    let super::PlanSummary { add: _, change: _, remove: _, import: _, changes: _ } = y;
}

fn module_ref(x: heimdall_core::infra::ModuleRef, y: super::ModuleRef) {
    let heimdall_core::infra::ModuleRef { source: _, version: _ } = x;
    let super::ModuleRef { source: _, version: _ } = y;
}

fn resource_schema(x: heimdall_core::infra::ResourceSchema, y: super::ResourceSchema) {
    let heimdall_core::infra::ResourceSchema {
        id: _,
        org_id: _,
        type_name: _,
        version: _,
        input_schema: _,
        defaults: _,
        module: _,
        requires_approval: _,
        drift_check_every_seconds: _,
        created_at: _,
        created_by: _,
        deprecated_at: _,
        deprecated_by: _,
        deleted_at: _,
    } = x;
    let super::ResourceSchema {
        id: _,
        org_id: _,
        type_name: _,
        version: _,
        input_schema: _,
        defaults: _,
        module: _,
        requires_approval: _,
        drift_check_every_seconds: _,
        created_at: _,
        created_by: _,
        deprecated_at: _,
        deprecated_by: _,
        deleted_at: _,
    } = y;
}

fn resource(x: heimdall_core::infra::Resource, y: super::Resource) {
    let heimdall_core::infra::Resource {
        id: _,
        org_id: _,
        name: _,
        component_id: _,
        environment_id: _,
        schema_id: _,
        region: _,
        status: _,
        revision: _,
        reason: _,
        outputs: _,
        drifted_at: _,
        created_at: _,
        created_by: _,
        updated_at: _,
    } = x;
    let super::Resource {
        id: _,
        org_id: _,
        name: _,
        component_id: _,
        environment_id: _,
        schema_id: _,
        region: _,
        status: _,
        revision: _,
        reason: _,
        outputs: _,
        drifted_at: _,
        created_at: _,
        created_by: _,
        updated_at: _,
    } = y;
}

fn revision(x: heimdall_core::infra::Revision, y: super::Revision) {
    let heimdall_core::infra::Revision {
        resource_id: _,
        number: _,
        hash: _,
        schema_id: _,
        schema_version: _,
        input: _,
        effective_input: _,
        region: _,
        imports: _,
        plan: _,
        state: _,
        requested_by: _,
        requested_at: _,
        decided_by: _,
        decided_at: _,
        decision_reason: _,
    } = x;
    let super::Revision {
        resource_id: _,
        number: _,
        hash: _,
        schema_id: _,
        schema_version: _,
        input: _,
        effective_input: _,
        region: _,
        imports: _,
        plan: _,
        state: _,
        requested_by: _,
        requested_at: _,
        decided_by: _,
        decided_at: _,
        decision_reason: _,
    } = y;
}

fn account_auth(x: heimdall_core::infra::AccountAuth, y: super::AccountAuth) {
    match x {
        heimdall_core::infra::AccountAuth::Oidc(..) | heimdall_core::infra::AccountAuth::Static { .. } => {}
    }
    match y {
        super::AccountAuth::Oidc(..) | super::AccountAuth::Static { .. } => {}
    }
}

fn oidc_target(x: heimdall_core::infra::OidcTarget, y: super::OidcTarget) {
    let heimdall_core::infra::OidcTarget {
        role_arn: _,
        workload_identity_provider: _,
        service_account: _,
        client_id: _,
        tenant_id: _,
        subscription_id: _,
        cluster_url: _,
        cluster_ca: _,
        audience: _,
    } = x;
    let super::OidcTarget {
        role_arn: _,
        workload_identity_provider: _,
        service_account: _,
        client_id: _,
        tenant_id: _,
        subscription_id: _,
        cluster_url: _,
        cluster_ca: _,
        audience: _,
    } = y;
}

fn cloud_account(x: heimdall_core::infra::CloudAccount, y: super::CloudAccount) {
    let heimdall_core::infra::CloudAccount {
        id: _,
        org_id: _,
        name: _,
        provider: _,
        region: _,
        state_bucket: _,
        state_endpoint: _,
        state_backend: _,
        state_storage_account: _,
        auth: _,
        drift_check_every_seconds: _,
        created_at: _,
        created_by: _,
    } = x;
    let super::CloudAccount {
        id: _,
        org_id: _,
        name: _,
        provider: _,
        region: _,
        state_bucket: _,
        state_endpoint: _,
        state_backend: _,
        state_storage_account: _,
        auth: _,
        drift_check_every_seconds: _,
        created_at: _,
        created_by: _,
    } = y;
}

fn account_link(x: heimdall_core::infra::AccountLink, y: super::AccountLink) {
    let heimdall_core::infra::AccountLink {
        account_id: _,
        scope: _,
        scope_id: _,
        environment_id: _,
        created_at: _,
        created_by: _,
    } = x;
    let super::AccountLink {
        account_id: _,
        scope: _,
        scope_id: _,
        environment_id: _,
        created_at: _,
        created_by: _,
    } = y;
}

fn account_ref(x: heimdall_core::infra::AccountRef, y: super::AccountRef) {
    let heimdall_core::infra::AccountRef {
        id: _,
        provider: _,
        region: _,
        state_bucket: _,
        state_endpoint: _,
        state_backend: _,
        state_storage_account: _,
        auth: _,
    } = x;
    let super::AccountRef {
        id: _,
        provider: _,
        region: _,
        state_bucket: _,
        state_endpoint: _,
        state_backend: _,
        state_storage_account: _,
        auth: _,
    } = y;
}

fn job_request(x: heimdall_core::infra::JobRequest, y: super::JobRequest) {
    let heimdall_core::infra::JobRequest {
        resource_id: _,
        resource_name: _,
        revision: _,
        operation: _,
        effective_input: _,
        module: _,
        schema_type: _,
        account: _,
        environment_id: _,
        environment: _,
        secret_inputs: _,
        imports: _,
        region: _,
        state_key: _,
        plan_key: _,
        plan_sha256: _,
        requested_by: _,
    } = x;
    let super::JobRequest {
        resource_id: _,
        resource_name: _,
        revision: _,
        operation: _,
        effective_input: _,
        module: _,
        schema_type: _,
        account: _,
        environment_id: _,
        environment: _,
        secret_inputs: _,
        imports: _,
        region: _,
        state_key: _,
        plan_key: _,
        plan_sha256: _,
        requested_by: _,
    } = y;
}

fn import_target(x: heimdall_core::infra::ImportTarget, y: super::ImportTarget) {
    let heimdall_core::infra::ImportTarget { address: _, id: _ } = x;
    let super::ImportTarget { address: _, id: _ } = y;
}

fn secret_input(x: heimdall_core::infra::SecretInput, y: super::SecretInput) {
    let heimdall_core::infra::SecretInput { variable: _, secret: _ } = x;
    let super::SecretInput { variable: _, secret: _ } = y;
}

fn job(x: heimdall_core::infra::Job, y: super::Job) {
    let heimdall_core::infra::Job {
        id: _,
        org_id: _,
        resource_id: _,
        operation: _,
        status: _,
        attempts: _,
        max_attempts: _,
        reason: _,
        request: _,
        queued_at: _,
        started_at: _,
        finished_at: _,
        lease_expires_at: _,
        agent: _,
        state_lock_id: _,
    } = x;
    let super::Job {
        id: _,
        org_id: _,
        resource_id: _,
        operation: _,
        status: _,
        attempts: _,
        max_attempts: _,
        reason: _,
        request: _,
        queued_at: _,
        started_at: _,
        finished_at: _,
        lease_expires_at: _,
        agent: _,
        state_lock_id: _,
    } = y;
}

fn agent(x: heimdall_core::infra::Agent, y: super::Agent) {
    let heimdall_core::infra::Agent {
        id: _,
        org_id: _,
        name: _,
        cert_sha256: _,
        created_at: _,
        created_by: _,
        revoked_at: _,
        last_seen_at: _,
        local_url: _,
    } = x;
    let super::Agent {
        id: _,
        org_id: _,
        name: _,
        cert_sha256: _,
        created_at: _,
        created_by: _,
        revoked_at: _,
        last_seen_at: _,
        local_url: _,
    } = y;
}

fn channel(x: heimdall_core::notify::Channel, y: super::Channel) {
    let heimdall_core::notify::Channel {
        id: _,
        org_id: _,
        name: _,
        url: _,
        sealed_url: _,
        created_at: _,
        created_by: _,
    } = x;
    let super::Channel { id: _, org_id: _, name: _, url: _, sealed_url: _, created_at: _, created_by: _ } = y;
}

fn delivery(x: heimdall_core::notify::Delivery, y: super::Delivery) {
    let heimdall_core::notify::Delivery {
        id: _,
        channel: _,
        event_id: _,
        action: _,
        status: _,
        attempts: _,
        last_result: _,
        created_at: _,
        next_attempt_at: _,
        delivered_at: _,
    } = x;
    let super::Delivery {
        id: _,
        channel: _,
        event_id: _,
        action: _,
        status: _,
        attempts: _,
        last_result: _,
        created_at: _,
        next_attempt_at: _,
        delivered_at: _,
    } = y;
}

fn on_behalf_of(x: heimdall_core::on_behalf::OnBehalfOf, y: super::OnBehalfOf) {
    let heimdall_core::on_behalf::OnBehalfOf { member_id: _, email: _ } = x;
    let super::OnBehalfOf { member_id: _, email: _ } = y;
}

fn revision_plan(x: heimdall_core::plan::RevisionPlan, y: super::RevisionPlan) {
    let heimdall_core::plan::RevisionPlan { sha256: _, summary: _ } = x;
    let super::RevisionPlan { sha256: _, summary: _ } = y;
}

fn holding(x: heimdall_core::ports::Holding, y: super::Holding) {
    let heimdall_core::ports::Holding {
        agent_id: _,
        agent: _,
        secret: _,
        environment: _,
        version: _,
        deactivated: _,
        reported_at: _,
        held_since: _,
        agent_revoked: _,
        agent_last_seen_at: _,
    } = x;
    let super::Holding {
        agent_id: _,
        agent: _,
        secret: _,
        environment: _,
        version: _,
        deactivated: _,
        reported_at: _,
        held_since: _,
        agent_revoked: _,
        agent_last_seen_at: _,
    } = y;
}

fn environment_deletion(x: heimdall_core::ports::EnvironmentDeletion, y: super::EnvironmentDeletion) {
    let heimdall_core::ports::EnvironmentDeletion {
        secret: _,
        environment_id: _,
        environment: _,
        status: _,
        started_at: _,
        deleted_at: _,
        through_version: _,
    } = x;
    let super::EnvironmentDeletion {
        secret: _,
        environment_id: _,
        environment: _,
        status: _,
        started_at: _,
        deleted_at: _,
        through_version: _,
    } = y;
}

fn verb(x: heimdall_core::program::Verb, y: super::Verb) {
    match x {
        heimdall_core::program::Verb::Read
        | heimdall_core::program::Verb::Write
        | heimdall_core::program::Verb::Delete => {}
    }
    match y {
        super::Verb::Read | super::Verb::Write | super::Verb::Delete => {}
    }
}

fn program_scope(x: heimdall_core::program::ProgramScope, y: super::ProgramScope) {
    let heimdall_core::program::ProgramScope {
        id: _,
        name: _,
        environment: _,
        environment_id: _,
        secrets: _,
        verbs: _,
        created_at: _,
        expires_at: _,
        revoked_at: _,
        token_sha256: _,
    } = x;
    let super::ProgramScope {
        id: _,
        name: _,
        environment: _,
        environment_id: _,
        secrets: _,
        verbs: _,
        created_at: _,
        expires_at: _,
        revoked_at: _,
        token_sha256: _,
    } = y;
}

fn program_allowance(x: heimdall_core::program::ProgramAllowance, y: super::ProgramAllowance) {
    let heimdall_core::program::ProgramAllowance {
        agent_id: _,
        environment_id: _,
        environment: _,
        secret: _,
        verbs: _,
        created_at: _,
        created_by: _,
    } = x;
    let super::ProgramAllowance {
        agent_id: _,
        environment_id: _,
        environment: _,
        secret: _,
        verbs: _,
        created_at: _,
        created_by: _,
    } = y;
}

fn registered_token(x: heimdall_core::program::RegisteredToken, y: super::RegisteredToken) {
    let heimdall_core::program::RegisteredToken {
        id: _,
        agent_id: _,
        name: _,
        environment_id: _,
        environment: _,
        secrets: _,
        verbs: _,
        created_at: _,
        expires_at: _,
        revoked_at: _,
    } = x;
    let super::RegisteredToken {
        id: _,
        agent_id: _,
        name: _,
        environment_id: _,
        environment: _,
        secrets: _,
        verbs: _,
        created_at: _,
        expires_at: _,
        revoked_at: _,
    } = y;
}

fn job_order(x: heimdall_core::queue::JobOrder, y: super::JobOrder) {
    match x {
        heimdall_core::queue::JobOrder::Oldest | heimdall_core::queue::JobOrder::Newest => {}
    }
    match y {
        super::JobOrder::Oldest | super::JobOrder::Newest => {}
    }
}

fn superseded(x: heimdall_core::retention::Superseded, y: super::Superseded) {
    let heimdall_core::retention::Superseded { secret: _, environment: _, version: _ } = x;
    let super::Superseded { secret: _, environment: _, version: _ } = y;
}

fn secret(x: heimdall_core::secrets::Secret, y: super::Secret) {
    let heimdall_core::secrets::Secret {
        id: _,
        org_id: _,
        name: _,
        secret_type: _,
        description: _,
        tags: _,
        components: _,
        personal_owner: _,
        owner_id: _,
        owner_keys: _,
        created_at: _,
        created_by: _,
        updated_at: _,
        at_risk: _,
        status: _,
        deleted_at: _,
    } = x;
    let super::Secret {
        id: _,
        org_id: _,
        name: _,
        secret_type: _,
        description: _,
        tags: _,
        components: _,
        personal_owner: _,
        owner_id: _,
        owner_keys: _,
        created_at: _,
        created_by: _,
        updated_at: _,
        at_risk: _,
        status: _,
        deleted_at: _,
    } = y;
}

fn secret_status(x: heimdall_core::secrets::SecretStatus, y: super::SecretStatus) {
    match x {
        heimdall_core::secrets::SecretStatus::Active
        | heimdall_core::secrets::SecretStatus::AtRisk
        | heimdall_core::secrets::SecretStatus::Deleting
        | heimdall_core::secrets::SecretStatus::Deleted => {}
    }
    match y {
        super::SecretStatus::Active
        | super::SecretStatus::AtRisk
        | super::SecretStatus::Deleting
        | super::SecretStatus::Deleted => {}
    }
}

fn at_risk(x: heimdall_core::secrets::AtRisk, y: super::AtRisk) {
    let heimdall_core::secrets::AtRisk { environment: _, member_id: _, email: _, versions: _, marked_at: _ } =
        x;
    let super::AtRisk { environment: _, member_id: _, email: _, versions: _, marked_at: _ } = y;
}

fn secret_version(x: heimdall_core::secrets::SecretVersion, y: super::SecretVersion) {
    let heimdall_core::secrets::SecretVersion {
        secret_id: _,
        environment_id: _,
        version: _,
        created_at: _,
        created_by: _,
        deactivated_at: _,
        keep_previous_seconds: _,
        superseded_at: _,
    } = x;
    let super::SecretVersion {
        secret_id: _,
        environment_id: _,
        version: _,
        created_at: _,
        created_by: _,
        deactivated_at: _,
        keep_previous_seconds: _,
        superseded_at: _,
    } = y;
}

fn assignment(x: heimdall_core::secrets::Assignment, y: super::Assignment) {
    let heimdall_core::secrets::Assignment { environment_id: _, agent_id: _, assigned_at: _, assigned_by: _ } =
        x;
    let super::Assignment { environment_id: _, agent_id: _, assigned_at: _, assigned_by: _ } = y;
}

fn member_certificate(x: heimdall_core::secrets::MemberCertificate, y: super::MemberCertificate) {
    let heimdall_core::secrets::MemberCertificate {
        sha256: _,
        org_id: _,
        member_id: _,
        spki_sha256: _,
        created_at: _,
        not_after: _,
    } = x;
    let super::MemberCertificate {
        sha256: _,
        org_id: _,
        member_id: _,
        spki_sha256: _,
        created_at: _,
        not_after: _,
    } = y;
}

fn agent_certificate(x: heimdall_core::secrets::AgentCertificate, y: super::AgentCertificate) {
    let heimdall_core::secrets::AgentCertificate {
        sha256: _,
        org_id: _,
        agent_id: _,
        names: _,
        created_at: _,
        not_after: _,
    } = x;
    let super::AgentCertificate { sha256: _, org_id: _, agent_id: _, names: _, created_at: _, not_after: _ } =
        y;
}

fn certificate_kind(x: heimdall_core::secrets::CertificateKind, y: super::CertificateKind) {
    match x {
        heimdall_core::secrets::CertificateKind::Member
        | heimdall_core::secrets::CertificateKind::AgentServer => {}
    }
    match y {
        super::CertificateKind::Member | super::CertificateKind::AgentServer => {}
    }
}

fn issued_certificate_info(
    x: heimdall_core::secrets::IssuedCertificateInfo,
    y: super::IssuedCertificateInfo,
) {
    let heimdall_core::secrets::IssuedCertificateInfo {
        sha256: _,
        kind: _,
        subject_id: _,
        subject: _,
        created_at: _,
        not_after: _,
        revoked_at: _,
    } = x;
    let super::IssuedCertificateInfo {
        sha256: _,
        kind: _,
        subject_id: _,
        subject: _,
        created_at: _,
        not_after: _,
        revoked_at: _,
    } = y;
}

fn approved_name(x: heimdall_core::server_names::ApprovedName, y: super::ApprovedName) {
    let heimdall_core::server_names::ApprovedName { name: _, approved_at: _, approved_by: _ } = x;
    let super::ApprovedName { name: _, approved_at: _, approved_by: _ } = y;
}

fn attempt(x: heimdall_core::state_lock::Attempt, y: super::Attempt) {
    let heimdall_core::state_lock::Attempt { attempt: _, started_at: _, ended_at: _, lock_holder: _ } = x;
    let super::Attempt { attempt: _, started_at: _, ended_at: _, lock_holder: _ } = y;
}

fn resource_status(x: heimdall_core::infra::ResourceStatus, y: super::ResourceStatus) {
    match x {
        heimdall_core::infra::ResourceStatus::PendingApproval
        | heimdall_core::infra::ResourceStatus::Queued
        | heimdall_core::infra::ResourceStatus::Applying
        | heimdall_core::infra::ResourceStatus::Provisioned
        | heimdall_core::infra::ResourceStatus::Failed
        | heimdall_core::infra::ResourceStatus::Refused
        | heimdall_core::infra::ResourceStatus::Deleting
        | heimdall_core::infra::ResourceStatus::Deleted
        | heimdall_core::infra::ResourceStatus::Abandoned => {}
    }
    match y {
        super::ResourceStatus::PendingApproval
        | super::ResourceStatus::Queued
        | super::ResourceStatus::Applying
        | super::ResourceStatus::Provisioned
        | super::ResourceStatus::Failed
        | super::ResourceStatus::Refused
        | super::ResourceStatus::Deleting
        | super::ResourceStatus::Deleted
        | super::ResourceStatus::Abandoned => {}
    }
}

fn revision_state(x: heimdall_core::infra::RevisionState, y: super::RevisionState) {
    match x {
        heimdall_core::infra::RevisionState::PendingApproval
        | heimdall_core::infra::RevisionState::Approved
        | heimdall_core::infra::RevisionState::NotRequired
        | heimdall_core::infra::RevisionState::Refused
        | heimdall_core::infra::RevisionState::Superseded
        | heimdall_core::infra::RevisionState::Expired => {}
    }
    match y {
        super::RevisionState::PendingApproval
        | super::RevisionState::Approved
        | super::RevisionState::NotRequired
        | super::RevisionState::Refused
        | super::RevisionState::Superseded
        | super::RevisionState::Expired => {}
    }
}

fn provider(x: heimdall_core::infra::Provider, y: super::Provider) {
    match x {
        heimdall_core::infra::Provider::Aws
        | heimdall_core::infra::Provider::Gcp
        | heimdall_core::infra::Provider::Azure
        | heimdall_core::infra::Provider::Kubernetes
        | heimdall_core::infra::Provider::Helm
        | heimdall_core::infra::Provider::Cloudflare => {}
    }
    match y {
        super::Provider::Aws
        | super::Provider::Gcp
        | super::Provider::Azure
        | super::Provider::Kubernetes
        | super::Provider::Helm
        | super::Provider::Cloudflare => {}
    }
}

fn state_backend(x: heimdall_core::infra::StateBackend, y: super::StateBackend) {
    match x {
        heimdall_core::infra::StateBackend::S3
        | heimdall_core::infra::StateBackend::Gcs
        | heimdall_core::infra::StateBackend::Azurerm => {}
    }
    match y {
        super::StateBackend::S3 | super::StateBackend::Gcs | super::StateBackend::Azurerm => {}
    }
}

fn link_scope(x: heimdall_core::infra::LinkScope, y: super::LinkScope) {
    match x {
        heimdall_core::infra::LinkScope::Organization
        | heimdall_core::infra::LinkScope::Domain
        | heimdall_core::infra::LinkScope::System => {}
    }
    match y {
        super::LinkScope::Organization | super::LinkScope::Domain | super::LinkScope::System => {}
    }
}

fn job_operation(x: heimdall_core::infra::JobOperation, y: super::JobOperation) {
    match x {
        heimdall_core::infra::JobOperation::Apply
        | heimdall_core::infra::JobOperation::Destroy
        | heimdall_core::infra::JobOperation::Import
        | heimdall_core::infra::JobOperation::DriftCheck
        | heimdall_core::infra::JobOperation::Plan => {}
    }
    match y {
        super::JobOperation::Apply
        | super::JobOperation::Destroy
        | super::JobOperation::Import
        | super::JobOperation::DriftCheck
        | super::JobOperation::Plan => {}
    }
}

fn job_status(x: heimdall_core::infra::JobStatus, y: super::JobStatus) {
    match x {
        heimdall_core::infra::JobStatus::Queued
        | heimdall_core::infra::JobStatus::Running
        | heimdall_core::infra::JobStatus::Completed
        | heimdall_core::infra::JobStatus::Failed
        | heimdall_core::infra::JobStatus::Cancelled => {}
    }
    match y {
        super::JobStatus::Queued
        | super::JobStatus::Running
        | super::JobStatus::Completed
        | super::JobStatus::Failed
        | super::JobStatus::Cancelled => {}
    }
}

fn error_code(x: heimdall_core::error::ErrorCode, y: super::ErrorCode) {
    match x {
        heimdall_core::error::ErrorCode::ValueNotAccepted
        | heimdall_core::error::ErrorCode::SchemaViolation
        | heimdall_core::error::ErrorCode::SelfApproval
        | heimdall_core::error::ErrorCode::StaleRevision
        | heimdall_core::error::ErrorCode::Forbidden
        | heimdall_core::error::ErrorCode::Unauthenticated
        | heimdall_core::error::ErrorCode::NotFound
        | heimdall_core::error::ErrorCode::ValueMayPersist
        | heimdall_core::error::ErrorCode::VersionDeactivated
        | heimdall_core::error::ErrorCode::NoCloudAccount
        | heimdall_core::error::ErrorCode::ModuleNotAllowed
        | heimdall_core::error::ErrorCode::TerraformChecksumMismatch
        | heimdall_core::error::ErrorCode::PolicyStale
        | heimdall_core::error::ErrorCode::AuditUnavailable
        | heimdall_core::error::ErrorCode::BadRequest
        | heimdall_core::error::ErrorCode::InvalidInput
        | heimdall_core::error::ErrorCode::InvalidPolicy
        | heimdall_core::error::ErrorCode::AlreadyExists
        | heimdall_core::error::ErrorCode::NotEmpty
        | heimdall_core::error::ErrorCode::LastOwner
        | heimdall_core::error::ErrorCode::AlreadyBootstrapped
        | heimdall_core::error::ErrorCode::Conflict
        | heimdall_core::error::ErrorCode::PayloadTooLarge
        | heimdall_core::error::ErrorCode::Unavailable
        | heimdall_core::error::ErrorCode::Internal
        | heimdall_core::error::ErrorCode::GrantInvalid
        | heimdall_core::error::ErrorCode::NoAgent
        | heimdall_core::error::ErrorCode::AgentRevoked
        | heimdall_core::error::ErrorCode::ImportWouldChange
        | heimdall_core::error::ErrorCode::StalePlan
        | heimdall_core::error::ErrorCode::TooManyRequests
        | heimdall_core::error::ErrorCode::VersionNotHeld
        | heimdall_core::error::ErrorCode::VersionSuperseded => {}
    }
    match y {
        super::ErrorCode::ValueNotAccepted
        | super::ErrorCode::SchemaViolation
        | super::ErrorCode::SelfApproval
        | super::ErrorCode::StaleRevision
        | super::ErrorCode::Forbidden
        | super::ErrorCode::Unauthenticated
        | super::ErrorCode::NotFound
        | super::ErrorCode::ValueMayPersist
        | super::ErrorCode::VersionDeactivated
        | super::ErrorCode::NoCloudAccount
        | super::ErrorCode::ModuleNotAllowed
        | super::ErrorCode::TerraformChecksumMismatch
        | super::ErrorCode::PolicyStale
        | super::ErrorCode::AuditUnavailable
        | super::ErrorCode::BadRequest
        | super::ErrorCode::InvalidInput
        | super::ErrorCode::InvalidPolicy
        | super::ErrorCode::AlreadyExists
        | super::ErrorCode::NotEmpty
        | super::ErrorCode::LastOwner
        | super::ErrorCode::AlreadyBootstrapped
        | super::ErrorCode::Conflict
        | super::ErrorCode::PayloadTooLarge
        | super::ErrorCode::Unavailable
        | super::ErrorCode::Internal
        | super::ErrorCode::GrantInvalid
        | super::ErrorCode::NoAgent
        | super::ErrorCode::AgentRevoked
        | super::ErrorCode::ImportWouldChange
        | super::ErrorCode::StalePlan
        | super::ErrorCode::TooManyRequests
        | super::ErrorCode::VersionNotHeld
        | super::ErrorCode::VersionSuperseded => {}
    }
}
