-- The server certificates of Agents' local APIs, as the CA issued them:
-- people's clients accept an Agent's local API only with one of its
-- unrevoked certificates (listed with the holders), and an owner can list
-- and revoke each, like people's client certificates.
CREATE TABLE agent_certificates (
    sha256     TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    agent_id   TEXT NOT NULL REFERENCES agents (id),
    names      TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    not_after  BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX agent_certificates_by_agent ON agent_certificates (agent_id);
