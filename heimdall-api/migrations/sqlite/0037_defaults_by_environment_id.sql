-- A schema's defaults are kept under each environment's id, not its name,
-- so that renaming an environment keeps them. A name no environment has
-- any more is kept as it was and never read.
UPDATE resource_schemas SET defaults = (
    SELECT COALESCE(json_group_object(COALESCE(e.id, d.key), json(d.value)), '{}')
    FROM json_each(resource_schemas.defaults) AS d
    LEFT JOIN catalog_entries AS e
        ON e.org_id = resource_schemas.org_id AND e.kind = 'environment' AND e.name = d.key
)
WHERE defaults <> '{}';
