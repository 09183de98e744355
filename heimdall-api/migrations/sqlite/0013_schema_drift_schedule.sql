-- How often each provisioned Resource of a schema is checked for drift
-- (seconds); NULL: never on a schedule.
ALTER TABLE resource_schemas ADD COLUMN drift_check_every_seconds BIGINT;
