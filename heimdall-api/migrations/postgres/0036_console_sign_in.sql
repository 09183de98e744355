-- Signing in to the Console from the CLI: a one-time code (stored as its
-- SHA-256) that the browser trades, once and within a minute, for a token
-- that ends by itself. Tokens made otherwise keep `expires_at` NULL and
-- last until revoked.
ALTER TABLE api_tokens ADD COLUMN expires_at BIGINT;

CREATE TABLE console_sign_ins (
    code_hash  TEXT PRIMARY KEY,
    org_id     TEXT NOT NULL REFERENCES organizations (id),
    member_id  TEXT NOT NULL REFERENCES members (id),
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT
);
