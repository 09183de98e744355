-- Every attempt of a job: which Agent ran it, when it began and ended, how
-- it ended, and how its Agent's Terraform names itself in a state lock
-- (`Who`), so that a later attempt can tell a dead attempt's lock from
-- anyone else's (heimdall_core::state_lock::takeover).
CREATE TABLE job_attempts (
    job_id      TEXT NOT NULL REFERENCES jobs (id),
    attempt     BIGINT NOT NULL,
    agent       TEXT NOT NULL,
    lock_holder TEXT,
    started_at  BIGINT NOT NULL,
    ended_at    BIGINT,
    -- completed, failed (the job may be queued again) or lease_expired
    outcome     TEXT CHECK (outcome IN ('completed', 'failed', 'lease_expired')),
    PRIMARY KEY (job_id, attempt)
);
