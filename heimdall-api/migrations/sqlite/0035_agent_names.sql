-- The host names an owner approved for an Agent's local-API certificate:
-- the CA signs no other (loopback names aside), since browsers and other
-- clients that check host names only trust the installation CA.
CREATE TABLE agent_names (
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    agent_id    TEXT NOT NULL REFERENCES agents (id),
    name        TEXT NOT NULL,
    approved_at BIGINT NOT NULL,
    approved_by TEXT NOT NULL,
    PRIMARY KEY (agent_id, name)
);
