-- Each revision names the schema version it was requested on: every job
-- of a revision runs that version's module, and `resource upgrade` moves
-- a Resource to another version with a new revision. Existing revisions
-- were all on their Resource's one schema.
ALTER TABLE resource_revisions ADD COLUMN schema_id TEXT;
ALTER TABLE resource_revisions ADD COLUMN schema_version BIGINT;
UPDATE resource_revisions SET
    schema_id = (SELECT r.schema_id FROM resources r WHERE r.id = resource_revisions.resource_id),
    schema_version = (SELECT s.version FROM resources r JOIN resource_schemas s ON s.id = r.schema_id
                      WHERE r.id = resource_revisions.resource_id);
