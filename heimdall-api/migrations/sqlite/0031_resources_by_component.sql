-- A job page of one Component finds that Component's Resources here;
-- without it, every page scanned all of the organization's Resources.
CREATE INDEX resources_by_component ON resources (org_id, component_id);
