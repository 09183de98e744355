-- What each Agent's store held when it last synced (never a value): the
-- whole report replaces the previous one.
CREATE TABLE agent_inventory (
    agent_id       TEXT NOT NULL REFERENCES agents (id),
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    secret_name    TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    version        BIGINT NOT NULL,
    deactivated    BIGINT NOT NULL CHECK (deactivated IN (0, 1)),
    reported_at    BIGINT NOT NULL,
    PRIMARY KEY (agent_id, secret_name, environment_id, version)
);
CREATE INDEX agent_inventory_by_secret ON agent_inventory (org_id, secret_name);

-- A secret's lifecycle: active, deleting (Agents delete their copies on
-- their next sync), deleted (no Agent's inventory lists it any more).
ALTER TABLE secrets ADD COLUMN lifecycle TEXT NOT NULL DEFAULT 'active';
ALTER TABLE secrets ADD COLUMN deleted_at BIGINT;
