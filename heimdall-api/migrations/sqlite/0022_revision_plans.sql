-- Approval bound to the plan: a revision's plan (SHA-256 of the plan file
-- in the state bucket, and a JSON summary of addresses, actions and
-- counts; never attribute values), NULL until its plan job reports one.
ALTER TABLE resource_revisions ADD COLUMN plan TEXT;

-- Plan jobs are jobs of their own operation; the table is rebuilt as in
-- 0012 (SQLite cannot change a CHECK constraint).
CREATE TABLE jobs_new (
    id               TEXT PRIMARY KEY,
    org_id           TEXT NOT NULL REFERENCES organizations (id),
    resource_id      TEXT NOT NULL REFERENCES resources (id),
    operation        TEXT NOT NULL CHECK (operation IN ('apply', 'destroy', 'import', 'drift_check', 'plan')),
    status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed', 'cancelled')),
    attempts         BIGINT NOT NULL,
    max_attempts     BIGINT NOT NULL,
    reason           TEXT,
    request          TEXT NOT NULL,
    queued_at        BIGINT NOT NULL,
    started_at       BIGINT,
    finished_at      BIGINT,
    lease_id         TEXT,
    lease_expires_at BIGINT,
    agent            TEXT,
    state_lock_id    TEXT
);
INSERT INTO jobs_new (id, org_id, resource_id, operation, status, attempts, max_attempts, reason, request,
                      queued_at, started_at, finished_at, lease_id, lease_expires_at, agent, state_lock_id)
    SELECT id, org_id, resource_id, operation, status, attempts, max_attempts, reason, request,
           queued_at, started_at, finished_at, lease_id, lease_expires_at, agent, state_lock_id FROM jobs;
CREATE TABLE job_logs_new (
    job_id    TEXT PRIMARY KEY REFERENCES jobs_new (id),
    content   TEXT NOT NULL,
    bytes     BIGINT NOT NULL,
    truncated BIGINT NOT NULL CHECK (truncated IN (0, 1))
);
INSERT INTO job_logs_new (job_id, content, bytes, truncated) SELECT job_id, content, bytes, truncated FROM job_logs;
DROP TABLE job_logs;
DROP TABLE jobs;
-- Renaming also renames the reference in job_logs_new.
ALTER TABLE jobs_new RENAME TO jobs;
ALTER TABLE job_logs_new RENAME TO job_logs;
CREATE INDEX jobs_queued ON jobs (org_id, queued_at) WHERE status = 'queued';
CREATE INDEX jobs_running_lease ON jobs (lease_expires_at) WHERE status = 'running';
CREATE INDEX jobs_resource ON jobs (resource_id);
CREATE UNIQUE INDEX jobs_one_running_per_resource ON jobs (resource_id) WHERE status = 'running';
