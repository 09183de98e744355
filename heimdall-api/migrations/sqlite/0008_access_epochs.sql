-- Access records are keyed by (Agent, epoch, seq, digest). An Agent's
-- store numbers reads within an epoch (a random id made when its numbering
-- starts), so a store recreated or restored from a backup is told apart
-- from repeats: a record at a held number with other content (another
-- digest) is kept too, and raises an audit event instead of being dropped.
-- Records from before epochs are epoch 'legacy' with digest '' (unknown:
-- a repeat of one is taken as a repeat, as before).

CREATE TABLE agent_access_epochs (
    agent_id      TEXT NOT NULL REFERENCES agents (id),
    epoch         TEXT NOT NULL,
    last_seq      BIGINT NOT NULL,
    first_seen_at BIGINT NOT NULL,
    PRIMARY KEY (agent_id, epoch)
);
INSERT INTO agent_access_epochs (agent_id, epoch, last_seq, first_seen_at)
    SELECT agent_id, 'legacy', last_seq, 0 FROM agent_access_seq;
DROP TABLE agent_access_seq;

CREATE TABLE access_records_by_epoch (
    agent_id    TEXT NOT NULL REFERENCES agents (id),
    epoch       TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    digest      TEXT NOT NULL,
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    accessor    TEXT NOT NULL,
    accessed_at BIGINT NOT NULL,
    secret_name TEXT NOT NULL,
    environment TEXT NOT NULL,
    version     BIGINT NOT NULL,
    source      TEXT NOT NULL,
    received_at BIGINT NOT NULL,
    PRIMARY KEY (agent_id, epoch, seq, digest)
);
INSERT INTO access_records_by_epoch
    (agent_id, epoch, seq, digest, org_id, accessor, accessed_at, secret_name, environment, version, source, received_at)
    SELECT agent_id, 'legacy', seq, '', org_id, accessor, accessed_at, secret_name, environment, version, source, received_at
    FROM access_records;
DROP TABLE access_records;
ALTER TABLE access_records_by_epoch RENAME TO access_records;
CREATE INDEX access_records_by_secret_time ON access_records (org_id, secret_name, accessed_at);
