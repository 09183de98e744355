-- A secret whose deletion completed no longer names its Components:
-- before this, its links stayed and a Component it had named could never
-- be deleted (NOT_EMPTY). Deletions that complete from now on drop their
-- links in the same transaction (db/inventory.rs).
DELETE FROM secret_components
WHERE secret_id IN (SELECT id FROM secrets WHERE lifecycle = 'deleted');
