-- Secrets put at risk by a member's removal: one row per secret,
-- environment and removed member, with the versions they read that were
-- still current (a JSON array) and when the mark was made. A new version
-- in that environment removes its rows (heimdall_core::at_risk).
CREATE TABLE secret_risks (
    secret_id      TEXT NOT NULL REFERENCES secrets (id),
    environment_id TEXT NOT NULL REFERENCES catalog_entries (id),
    member_id      TEXT NOT NULL REFERENCES members (id),
    member_email   TEXT NOT NULL,
    versions       TEXT NOT NULL,
    marked_at      BIGINT NOT NULL,
    PRIMARY KEY (secret_id, environment_id, member_id)
);
