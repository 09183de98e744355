-- A deletion is done only once every Agent that may hold a copy heard of
-- it: each Agent's sync says the API's time of the last answer it applied
-- before taking its inventory (`applied_through`), and each deletion keeps
-- when it started and, in one environment, the highest version it covers.
ALTER TABLE agents ADD COLUMN applied_through BIGINT;
ALTER TABLE secrets ADD COLUMN deletion_started_at BIGINT;
UPDATE secrets SET deletion_started_at = updated_at WHERE lifecycle = 'deleting';
ALTER TABLE secret_environment_deletions ADD COLUMN through_version BIGINT;
