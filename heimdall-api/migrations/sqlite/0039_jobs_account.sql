-- The cloud account each job runs with, out of its frozen request: a
-- Resource keeps its state on that account until it is deleted, so the
-- account's state location cannot move, its link go or the account be
-- deleted while one does.
ALTER TABLE jobs ADD COLUMN account_id TEXT;
UPDATE jobs SET account_id = json_extract(request, '$.account.id');
CREATE INDEX jobs_account ON jobs (account_id);
