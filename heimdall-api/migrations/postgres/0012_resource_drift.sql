-- Since when a drift check found the Resource's objects differ from what
-- was applied; NULL when they match (or were never checked).
ALTER TABLE resources ADD COLUMN drifted_at BIGINT;

-- Drift checks are jobs of their own operation.
ALTER TABLE jobs DROP CONSTRAINT jobs_operation_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_operation_check
    CHECK (operation IN ('apply', 'destroy', 'import', 'drift_check'));
