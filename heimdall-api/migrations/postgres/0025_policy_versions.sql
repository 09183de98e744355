-- A number bumped in the same transaction as every policy change: a
-- request reads it (one integer) and compiles the organization's policies
-- only when it moved, instead of reading every policy on every request.
ALTER TABLE organizations ADD COLUMN policy_version BIGINT NOT NULL DEFAULT 0;
