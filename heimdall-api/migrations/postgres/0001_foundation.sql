-- Foundation: organizations, members, tokens, catalog, policies, audit feed.
-- Ids are UUID text; times are microseconds since the Unix epoch (BIGINT),
-- the same representation on PostgreSQL and SQLite.

CREATE TABLE installation (
    singleton       INTEGER PRIMARY KEY CHECK (singleton = 1),
    bootstrapped_at BIGINT NOT NULL
);

CREATE TABLE organizations (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

CREATE TABLE members (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    email      TEXT NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member')),
    created_at BIGINT NOT NULL,
    removed_at BIGINT
);
CREATE UNIQUE INDEX members_active_email ON members (org_id, email) WHERE removed_at IS NULL;

CREATE TABLE api_tokens (
    id         TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    member_id  TEXT NOT NULL REFERENCES members (id),
    name       TEXT NOT NULL,
    token_hash TEXT NOT NULL UNIQUE,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX api_tokens_member ON api_tokens (member_id);

CREATE TABLE catalog_entries (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    kind        TEXT NOT NULL CHECK (kind IN ('domain', 'system', 'component', 'environment')),
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    parent_id   TEXT REFERENCES catalog_entries (id),
    created_at  BIGINT NOT NULL,
    created_by  TEXT NOT NULL
);
CREATE UNIQUE INDEX catalog_entries_name ON catalog_entries (org_id, kind, COALESCE(parent_id, ''), name);
CREATE INDEX catalog_entries_parent ON catalog_entries (parent_id);

CREATE TABLE policies (
    id          TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    name        TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    created_by  TEXT NOT NULL,
    UNIQUE (org_id, name)
);

CREATE TABLE audit_events (
    id       TEXT PRIMARY KEY,
    org_id   TEXT NOT NULL REFERENCES organizations (id),
    at       BIGINT NOT NULL,
    actor    TEXT NOT NULL,
    action   TEXT NOT NULL,
    target   TEXT NOT NULL,
    detail   TEXT NOT NULL
);
CREATE INDEX audit_events_org_at ON audit_events (org_id, at DESC);
