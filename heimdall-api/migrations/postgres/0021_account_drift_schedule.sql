-- How often each provisioned Resource placed on this account is checked
-- for drift (seconds); NULL: not on the account's schedule (its schema may
-- still have one; the shorter of the two applies).
ALTER TABLE cloud_accounts ADD COLUMN drift_check_every_seconds BIGINT;
