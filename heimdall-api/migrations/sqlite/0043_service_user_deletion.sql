-- `database user delete`: from `drop_after` an Agent drops the user's
-- logins, using the admin secret as a read by whoever asked (by member
-- id); nothing rotates meanwhile. Existing users are not being deleted.
ALTER TABLE database_users ADD COLUMN drop_after BIGINT;
ALTER TABLE database_users ADD COLUMN deleted_by TEXT;
ALTER TABLE database_users ADD COLUMN deleted_by_id TEXT;
