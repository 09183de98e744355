-- An abandoned Resource stays listed with its history, but its name is
-- free again: `resource import` may take the same object up under it.
DROP INDEX resources_name;
CREATE UNIQUE INDEX resources_name ON resources (org_id, component_id, environment_id, name)
    WHERE status NOT IN ('deleted', 'abandoned');
