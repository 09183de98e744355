-- A personal secret is bound to its owner's member id, never to an email
-- (an email removed and added again is a new member), and to the public
-- keys of the client certificates she proved she holds.

ALTER TABLE secrets ADD COLUMN personal_owner_id TEXT;

-- Existing personal secrets: the member who had that email when the secret
-- was created. None (the data is inconsistent): the nil id, which is no
-- member, so nobody reaches the secret rather than the wrong person.
UPDATE secrets SET personal_owner_id = COALESCE(
    (SELECT m.id FROM members m
      WHERE m.org_id = secrets.org_id AND m.email = secrets.personal_owner
        AND m.created_at <= secrets.created_at
        AND (m.removed_at IS NULL OR m.removed_at >= secrets.created_at)
      ORDER BY m.created_at DESC LIMIT 1),
    '00000000-0000-0000-0000-000000000000')
WHERE personal_owner IS NOT NULL;

-- SHA-256 of each public key (SubjectPublicKeyInfo) bound to a personal
-- secret. A secret created before this migration has none until its
-- owner's next write binds her key.
CREATE TABLE personal_secret_keys (
    secret_id   TEXT NOT NULL REFERENCES secrets (id),
    spki_sha256 TEXT NOT NULL,
    added_at    BIGINT NOT NULL,
    PRIMARY KEY (secret_id, spki_sha256)
);

-- The public key of each person's certificate, recorded at issue (NULL
-- for certificates issued before this migration).
ALTER TABLE member_certificates ADD COLUMN spki_sha256 TEXT;
