-- Databases whose service users an Agent creates and rotates. The API
-- keeps where each database is, the name of the secret with its admin
-- credential, and each user's schedule; no password ever.
CREATE TABLE databases (
    id             TEXT PRIMARY KEY,
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    name           TEXT NOT NULL,
    engine         TEXT NOT NULL,
    host           TEXT NOT NULL,
    port           INTEGER NOT NULL,
    database_name  TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    admin_secret   TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    created_by     TEXT NOT NULL,
    UNIQUE (org_id, name)
);

-- One row per service user: its schedule, the version applications get,
-- the rotation in flight, the login in its grace period, and the claim
-- (lease) of the one Agent working on it.
CREATE TABLE database_users (
    id                   TEXT PRIMARY KEY,
    org_id               TEXT NOT NULL REFERENCES organizations (id),
    database_id          TEXT NOT NULL REFERENCES databases (id),
    name                 TEXT NOT NULL,
    secret_id            TEXT NOT NULL,
    secret_name          TEXT NOT NULL,
    rotate_every_seconds BIGINT NOT NULL,
    grace_seconds        BIGINT NOT NULL,
    grants               TEXT,
    current_version      BIGINT,
    pending_version      BIGINT,
    retiring_version     BIGINT,
    grace_until          BIGINT,
    last_rotated_at      BIGINT,
    next_rotation_at     BIGINT NOT NULL,
    rotate_requested     BIGINT NOT NULL DEFAULT 0,
    retry_at             BIGINT,
    last_error           TEXT,
    lease_id             TEXT,
    lease_agent          TEXT,
    lease_kind           TEXT,
    lease_until          BIGINT,
    created_at           BIGINT NOT NULL,
    created_by           TEXT NOT NULL,
    UNIQUE (database_id, name)
);
