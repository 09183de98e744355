-- Resource pages walk (org_id, created_at, id): without this index every
-- page sorted all of the organization's Resources.
CREATE INDEX resources_by_creation ON resources (org_id, created_at, id);
