-- A schema's defaults are kept under each environment's id, not its name,
-- so that renaming an environment keeps them. A name no environment has
-- any more is kept as it was and never read.
UPDATE resource_schemas AS s SET defaults = (
    SELECT COALESCE(jsonb_object_agg(COALESCE(e.id, d.key), d.value), '{}'::jsonb)::text
    FROM jsonb_each(s.defaults::jsonb) AS d
    LEFT JOIN catalog_entries AS e
        ON e.org_id = s.org_id AND e.kind = 'environment' AND e.name = d.key
)
WHERE s.defaults <> '{}';
