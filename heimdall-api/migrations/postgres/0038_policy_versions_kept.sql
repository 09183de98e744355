-- A policy is changed in place (`PATCH /v1/policies/{id}`): it carries its
-- version, and every version's text is kept. Policies made before this
-- migration are version 1, with that version in their history.
ALTER TABLE policies ADD COLUMN version BIGINT NOT NULL DEFAULT 1;
ALTER TABLE policies ADD COLUMN updated_at BIGINT;
ALTER TABLE policies ADD COLUMN updated_by TEXT;

CREATE TABLE policy_history (
    policy_id   TEXT NOT NULL,
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    version     BIGINT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT NOT NULL,
    body        TEXT NOT NULL,
    written_at  BIGINT NOT NULL,
    written_by  TEXT NOT NULL,
    PRIMARY KEY (policy_id, version)
);

INSERT INTO policy_history (policy_id, org_id, version, name, description, body, written_at, written_by)
SELECT id, org_id, 1, name, description, body, created_at, created_by FROM policies;
