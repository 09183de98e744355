-- Approval bound to the plan: a revision's plan (SHA-256 of the plan file
-- in the state bucket, and a JSON summary of addresses, actions and
-- counts; never attribute values), NULL until its plan job reports one.
ALTER TABLE resource_revisions ADD COLUMN plan TEXT;

-- Plan jobs are jobs of their own operation.
ALTER TABLE jobs DROP CONSTRAINT jobs_operation_check;
ALTER TABLE jobs ADD CONSTRAINT jobs_operation_check
    CHECK (operation IN ('apply', 'destroy', 'import', 'drift_check', 'plan'));
