-- Secret Manager metadata. No column here ever holds a secret value.

CREATE TABLE secrets (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    name           TEXT NOT NULL,
    secret_type    TEXT NOT NULL,
    description    TEXT NOT NULL DEFAULT '',
    tags           TEXT NOT NULL,
    personal_owner TEXT,
    created_at     BIGINT NOT NULL,
    created_by     TEXT NOT NULL,
    updated_at     BIGINT NOT NULL,
    UNIQUE (org_id, name)
);

CREATE TABLE secret_components (
    secret_id    TEXT NOT NULL REFERENCES secrets (id),
    component_id TEXT NOT NULL REFERENCES catalog_entries (id),
    PRIMARY KEY (secret_id, component_id)
);

CREATE TABLE secret_versions (
    secret_id      TEXT NOT NULL REFERENCES secrets (id),
    environment_id TEXT NOT NULL REFERENCES catalog_entries (id),
    version        BIGINT NOT NULL,
    created_at     BIGINT NOT NULL,
    created_by     TEXT NOT NULL,
    deactivated_at BIGINT,
    PRIMARY KEY (secret_id, environment_id, version)
);

CREATE TABLE environment_agents (
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    environment_id TEXT NOT NULL REFERENCES catalog_entries (id),
    agent_id       TEXT NOT NULL REFERENCES agents (id),
    assigned_at    BIGINT NOT NULL,
    assigned_by    TEXT NOT NULL,
    PRIMARY KEY (environment_id, agent_id)
);
