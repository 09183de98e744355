-- The Agent's value store. Columns hold ciphertext, nonces and key ids,
-- never a plaintext value or key.

-- Data keys, each sealed under the master key (nonce || AES-256-GCM), with a
-- check value (a constant sealed under the data key) that tells a wrong
-- master key at open.
CREATE TABLE data_keys (
    generation  BIGINT PRIMARY KEY,
    key_id      TEXT NOT NULL UNIQUE,
    sealed_key  BYTEA NOT NULL,
    check_value BYTEA NOT NULL
);

-- One row per (organization, secret, environment, version). A tombstone
-- (deactivated = 1) has no key id, nonce or ciphertext.
CREATE TABLE secret_values (
    org_id         TEXT NOT NULL,
    secret         TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    version        BIGINT NOT NULL CHECK (version > 0),
    key_id         TEXT REFERENCES data_keys (key_id),
    nonce          BYTEA,
    ciphertext     BYTEA,
    deactivated    BIGINT NOT NULL DEFAULT 0 CHECK (deactivated IN (0, 1)),
    PRIMARY KEY (org_id, secret, environment_id, version),
    CHECK ((deactivated = 1 AND key_id IS NULL AND nonce IS NULL AND ciphertext IS NULL)
        OR (deactivated = 0 AND key_id IS NOT NULL AND nonce IS NOT NULL AND ciphertext IS NOT NULL))
);

-- The access-record sequence: one row, advanced in the same transaction
-- as each record's insert (no gaps by construction; deliberately not a
-- SEQUENCE, which skips numbers on rollback).
CREATE TABLE access_counter (
    id       BIGINT PRIMARY KEY CHECK (id = 1),
    last_seq BIGINT NOT NULL CHECK (last_seq >= 0)
);
INSERT INTO access_counter (id, last_seq) VALUES (1, 0);

CREATE TABLE access_records (
    seq            BIGINT PRIMARY KEY CHECK (seq > 0),
    accessor       TEXT NOT NULL,
    accessed_at    BIGINT NOT NULL,
    secret         TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    version        BIGINT NOT NULL,
    source         TEXT NOT NULL,
    served_by      TEXT NOT NULL
);
