-- Each organization's sync generation: every change to a secret (its row,
-- its Components, the keys bound to it) takes the next one, and the secret
-- keeps it, so an Agent's sync answer carries only the secrets changed
-- after the generation the Agent already holds. Stamped here, by
-- triggers, so that no write path can forget to. The generation's row
-- stays locked until its writer commits: generations are taken in commit
-- order, and a reader that sees generation G sees every change up to G.
-- `floor`: the generation when an API process last started (it jumps
-- the generation past anything an Agent could know): an Agent that knows
-- a generation below it gets the whole list, so after a restore, which
-- is followed by a start, no Agent keeps a list the database lost.
CREATE TABLE sync_generations (
    org_id     TEXT PRIMARY KEY REFERENCES organizations (id),
    generation BIGINT NOT NULL,
    floor      BIGINT NOT NULL DEFAULT 0
);

-- Rows from before this migration keep 0: in every whole list.
ALTER TABLE secrets ADD COLUMN sync_generation BIGINT NOT NULL DEFAULT 0;
CREATE INDEX secrets_by_sync_generation ON secrets (org_id, sync_generation);

CREATE FUNCTION heimdall_next_sync_generation(org TEXT) RETURNS BIGINT AS $$
    INSERT INTO sync_generations (org_id, generation) VALUES (org, 1)
        ON CONFLICT (org_id) DO UPDATE SET generation = sync_generations.generation + 1
        RETURNING generation;
$$ LANGUAGE sql;

CREATE FUNCTION heimdall_secrets_sync_stamp() RETURNS trigger AS $$
BEGIN
    NEW.sync_generation := heimdall_next_sync_generation(NEW.org_id);
    RETURN NEW;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER secrets_sync_stamp BEFORE INSERT OR UPDATE ON secrets
    FOR EACH ROW EXECUTE FUNCTION heimdall_secrets_sync_stamp();

-- A Component linked or unlinked, a key bound or unbound: the secret's
-- row is touched, and the trigger above stamps it.
CREATE FUNCTION heimdall_secret_part_sync_stamp() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        UPDATE secrets SET sync_generation = sync_generation WHERE id = OLD.secret_id;
    ELSE
        UPDATE secrets SET sync_generation = sync_generation WHERE id = NEW.secret_id;
    END IF;
    RETURN NULL;
END
$$ LANGUAGE plpgsql;

CREATE TRIGGER secret_components_sync_stamp AFTER INSERT OR DELETE ON secret_components
    FOR EACH ROW EXECUTE FUNCTION heimdall_secret_part_sync_stamp();

CREATE TRIGGER personal_secret_keys_sync_stamp AFTER INSERT OR DELETE ON personal_secret_keys
    FOR EACH ROW EXECUTE FUNCTION heimdall_secret_part_sync_stamp();

-- What every sync reads of the secrets that are not simply active: found
-- among those, not by reading the whole organization's.
CREATE INDEX secrets_not_active ON secrets (org_id, name) WHERE lifecycle <> 'active';
CREATE INDEX secret_versions_deactivated ON secret_versions (secret_id) WHERE deactivated_at IS NOT NULL;
