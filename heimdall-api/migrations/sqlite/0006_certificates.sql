-- People's client certificates (for Agents' local APIs) and where each
-- Agent's local API is reached. Certificates are issued from a CSR: the
-- private key never leaves the person's machine; only the SHA-256 of the
-- issued certificate is kept, and Agents accept exactly those.
CREATE TABLE member_certificates (
    sha256      TEXT PRIMARY KEY,
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    member_id   TEXT NOT NULL REFERENCES members (id),
    created_at  BIGINT NOT NULL,
    not_after   BIGINT NOT NULL,
    revoked_at  BIGINT
);
CREATE INDEX member_certificates_by_member ON member_certificates (member_id);

ALTER TABLE agents ADD COLUMN local_url TEXT;
