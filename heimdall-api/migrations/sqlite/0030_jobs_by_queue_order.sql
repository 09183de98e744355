-- Job pages walk (org_id, queued_at, id): without this index every page
-- sorted all of the organization's jobs.
CREATE INDEX jobs_by_queue_order ON jobs (org_id, queued_at, id);
