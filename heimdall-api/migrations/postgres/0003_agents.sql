-- Agents: enrollment tokens (hashed, one use), enrolled Agents pinned to the
-- certificate issued to them, and the state lock each job attempt reports.

CREATE TABLE agent_registrations (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    name       TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_by TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);

CREATE TABLE agents (
    id           TEXT PRIMARY KEY,
    org_id       TEXT NOT NULL REFERENCES organizations (id),
    name         TEXT NOT NULL,
    cert_sha256  TEXT NOT NULL,
    created_at   BIGINT NOT NULL,
    created_by   TEXT NOT NULL,
    revoked_at   BIGINT,
    last_seen_at BIGINT
);
CREATE UNIQUE INDEX agents_active_name ON agents (org_id, name) WHERE revoked_at IS NULL;

ALTER TABLE jobs ADD COLUMN state_lock_id TEXT;
