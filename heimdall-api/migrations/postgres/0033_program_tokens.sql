-- What an owner lets each Agent's programs write or delete, per
-- environment and secret glob (reads need no allowance), and the program
-- tokens each Agent registered: ids and scopes, never a token or its hash.
-- The API lets a program write or delete only through a registered, live
-- token inside an allowance, so an Agent's key alone does no more.
CREATE TABLE program_allowances (
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    agent_id       TEXT NOT NULL REFERENCES agents (id),
    environment_id TEXT NOT NULL,
    secret_glob    TEXT NOT NULL,
    verbs          TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    created_by     TEXT NOT NULL,
    PRIMARY KEY (agent_id, environment_id, secret_glob)
);

CREATE TABLE program_tokens (
    org_id         TEXT NOT NULL REFERENCES organizations (id),
    agent_id       TEXT NOT NULL REFERENCES agents (id),
    id             TEXT NOT NULL,
    name           TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    secrets        TEXT NOT NULL,
    verbs          TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT,
    revoked_at     BIGINT,
    PRIMARY KEY (agent_id, id)
);
