-- Infrastructure Manager: schemas, cloud accounts, resources, revisions, jobs.
-- JSON is stored as TEXT (the same on both backends); booleans as 0/1.

CREATE TABLE resource_schemas (
    id                TEXT PRIMARY KEY,
    org_id            TEXT NOT NULL REFERENCES organizations (id),
    type_name         TEXT NOT NULL,
    version           BIGINT NOT NULL,
    input_schema      TEXT NOT NULL,
    defaults          TEXT NOT NULL,
    module_source     TEXT,
    module_version    TEXT,
    requires_approval BIGINT NOT NULL CHECK (requires_approval IN (0, 1)),
    created_at        BIGINT NOT NULL,
    created_by        TEXT NOT NULL,
    UNIQUE (org_id, type_name, version)
);

CREATE TABLE cloud_accounts (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    name           TEXT NOT NULL,
    provider       TEXT NOT NULL,
    region         TEXT NOT NULL,
    state_bucket   TEXT NOT NULL,
    state_endpoint TEXT,
    -- {"kind":"oidc","role_arn":…} or {"kind":"static","secret":<name>}: never a credential.
    auth           TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    created_by     TEXT NOT NULL,
    UNIQUE (org_id, name)
);

CREATE TABLE cloud_account_links (
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    account_id     TEXT NOT NULL REFERENCES cloud_accounts (id),
    scope          TEXT NOT NULL CHECK (scope IN ('organization', 'domain', 'system')),
    scope_id       TEXT NOT NULL, -- the organization's id for scope = organization
    environment_id TEXT NOT NULL REFERENCES catalog_entries (id),
    created_at     BIGINT NOT NULL,
    created_by     TEXT NOT NULL,
    PRIMARY KEY (org_id, scope, scope_id, environment_id)
);

CREATE TABLE resources (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    name           TEXT NOT NULL,
    component_id   TEXT NOT NULL REFERENCES catalog_entries (id),
    environment_id TEXT NOT NULL REFERENCES catalog_entries (id),
    schema_id      TEXT NOT NULL REFERENCES resource_schemas (id),
    region         TEXT,
    status         TEXT NOT NULL,
    revision       BIGINT NOT NULL,
    reason         TEXT,
    outputs        TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    created_by     TEXT NOT NULL,
    updated_at     BIGINT NOT NULL
);
-- A deleted Resource stays listed but frees its name.
CREATE UNIQUE INDEX resources_name ON resources (org_id, component_id, environment_id, name) WHERE status <> 'deleted';

CREATE TABLE resource_revisions (
    resource_id     TEXT NOT NULL REFERENCES resources (id),
    number          BIGINT NOT NULL,
    hash            TEXT NOT NULL,
    input           TEXT NOT NULL,
    effective_input TEXT NOT NULL,
    region          TEXT,
    state           TEXT NOT NULL,
    requested_by    TEXT NOT NULL,
    requested_at    BIGINT NOT NULL,
    decided_by      TEXT,
    decided_at      BIGINT,
    decision_reason TEXT,
    PRIMARY KEY (resource_id, number)
);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES organizations (id),
    resource_id      TEXT NOT NULL REFERENCES resources (id),
    operation        TEXT NOT NULL CHECK (operation IN ('apply', 'destroy', 'import')),
    status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
    attempts         BIGINT NOT NULL,
    max_attempts     BIGINT NOT NULL,
    reason           TEXT,
    -- The frozen request: resource, revision, input, module, account reference. No credential.
    request          TEXT NOT NULL,
    queued_at        BIGINT NOT NULL,
    started_at       BIGINT,
    finished_at      BIGINT,
    lease_id         TEXT,
    lease_expires_at BIGINT,
    agent            TEXT
);
CREATE INDEX jobs_queued ON jobs (org_id, queued_at) WHERE status = 'queued';
CREATE INDEX jobs_running_lease ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_resource ON jobs (resource_id);
-- One running job per Resource: two claimers racing for two queued jobs of
-- the same Resource cannot both win.
CREATE UNIQUE INDEX jobs_one_running_per_resource ON jobs (resource_id) WHERE status = 'running';

CREATE TABLE job_logs (
    job_id    TEXT PRIMARY KEY REFERENCES jobs (id),
    content   TEXT NOT NULL,
    bytes     BIGINT NOT NULL,
    truncated BIGINT NOT NULL CHECK (truncated IN (0, 1))
);
