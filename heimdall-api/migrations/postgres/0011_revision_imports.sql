-- An imported Resource's first revision names the objects its first apply
-- imports: JSON [{"address","id"}], NULL for every other revision.
ALTER TABLE resource_revisions ADD COLUMN imports TEXT;
