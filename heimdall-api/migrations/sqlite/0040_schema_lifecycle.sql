-- A schema version is deprecated (no new Resource on it) and, once no
-- Resource uses it, deleted: kept for the history of the Resources that
-- were on it, gone from lists and lookups.
ALTER TABLE resource_schemas ADD COLUMN deprecated_at BIGINT;
ALTER TABLE resource_schemas ADD COLUMN deprecated_by TEXT;
ALTER TABLE resource_schemas ADD COLUMN deleted_at BIGINT;
