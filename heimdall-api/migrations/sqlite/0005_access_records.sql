-- Reads served by Agents, as they reported them on sync. No column here
-- ever holds a secret value: names, a version, who, when and from where.

CREATE TABLE access_records (
    agent_id    TEXT NOT NULL REFERENCES agents (id),
    seq         BIGINT NOT NULL,
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    accessor    TEXT NOT NULL,
    accessed_at BIGINT NOT NULL,
    secret_name TEXT NOT NULL,
    environment TEXT NOT NULL,
    version     BIGINT NOT NULL,
    source      TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (agent_id, seq)
);

CREATE INDEX access_records_by_secret ON access_records (org_id, secret_name, accessed_at);

-- The highest sequence number stored per Agent: the row a sync locks, so
-- two syncs of one Agent see each other's gaps in order.
CREATE TABLE agent_access_seq (
    agent_id TEXT PRIMARY KEY REFERENCES agents (id),
    last_seq BIGINT NOT NULL
);
