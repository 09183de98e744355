-- Deleting a secret in one environment: `deleting` until no Agent's
-- inventory lists the secret there, then `deleted`. A new version there
-- removes the row (the secret is live there again).
CREATE TABLE secret_environment_deletions (
    secret_id      TEXT NOT NULL REFERENCES secrets (id),
    environment_id TEXT NOT NULL REFERENCES catalog_entries (id),
    lifecycle      TEXT NOT NULL CHECK (lifecycle IN ('deleting', 'deleted')),
    started_at     BIGINT NOT NULL,
    deleted_at     BIGINT,
    PRIMARY KEY (secret_id, environment_id)
);
