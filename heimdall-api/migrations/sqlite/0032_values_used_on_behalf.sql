-- A database's admin secret is used on someone's behalf: the connection
-- is secured (`verify-full`, or `disable` for the Agent's own machine
-- only) and each service user records who created it, by member id, so
-- that every task decides the use as her read. Databases registered
-- before keep cleartext; the Agent refuses it to any host but loopback.
ALTER TABLE databases ADD COLUMN tls TEXT NOT NULL DEFAULT 'disable';
ALTER TABLE databases ADD COLUMN ca_pem TEXT;
ALTER TABLE database_users ADD COLUMN created_by_id TEXT;
-- The creator as she is now a member, where her email still names one.
UPDATE database_users SET created_by_id =
    (SELECT m.id FROM members m WHERE m.org_id = database_users.org_id AND m.email = database_users.created_by
       AND m.removed_at IS NULL);
