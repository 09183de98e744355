-- Environments an Agent was unassigned from: it deletes what it holds
-- there on its next sync, and the row goes once its inventory lists
-- nothing there (or it is assigned there again).
CREATE TABLE agent_releases (
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    agent_id       TEXT NOT NULL REFERENCES agents (id),
    environment_id TEXT NOT NULL REFERENCES catalog_entries (id),
    released_at    BIGINT NOT NULL,
    released_by    TEXT NOT NULL,
    PRIMARY KEY (agent_id, environment_id)
);
