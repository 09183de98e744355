-- Every job that becomes queued (made, retried, handed on by the reaper,
-- through any API replica) wakes the claims waiting on every replica:
-- each replica LISTENs on `heimdall_jobs`. The notification is sent when
-- the transaction commits, and carries only the organization's id.
CREATE FUNCTION heimdall_job_queued() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('heimdall_jobs', NEW.org_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER jobs_queued_notify
    AFTER INSERT OR UPDATE OF status ON jobs
    FOR EACH ROW WHEN (NEW.status = 'queued')
    EXECUTE FUNCTION heimdall_job_queued();
