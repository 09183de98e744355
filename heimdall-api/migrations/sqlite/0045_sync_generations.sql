-- Each organization's sync generation: every change to a secret (its row,
-- its Components, the keys bound to it) takes the next one, and the secret
-- keeps it, so an Agent's sync answer carries only the secrets changed
-- after the generation the Agent already holds. Stamped here, by
-- triggers, so that no write path can forget to.
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

CREATE TRIGGER secrets_sync_on_insert AFTER INSERT ON secrets
BEGIN
    INSERT INTO sync_generations (org_id, generation) VALUES (NEW.org_id, 1)
        ON CONFLICT (org_id) DO UPDATE SET generation = generation + 1;
    UPDATE secrets SET sync_generation = (SELECT generation FROM sync_generations WHERE org_id = NEW.org_id)
        WHERE id = NEW.id;
END;

-- Not when the stamp itself is what changed.
CREATE TRIGGER secrets_sync_on_update AFTER UPDATE ON secrets
WHEN NEW.sync_generation = OLD.sync_generation
BEGIN
    INSERT INTO sync_generations (org_id, generation) VALUES (NEW.org_id, 1)
        ON CONFLICT (org_id) DO UPDATE SET generation = generation + 1;
    UPDATE secrets SET sync_generation = (SELECT generation FROM sync_generations WHERE org_id = NEW.org_id)
        WHERE id = NEW.id;
END;

CREATE TRIGGER secret_components_sync_on_insert AFTER INSERT ON secret_components
BEGIN
    INSERT INTO sync_generations (org_id, generation) SELECT org_id, 1 FROM secrets WHERE id = NEW.secret_id
        ON CONFLICT (org_id) DO UPDATE SET generation = generation + 1;
    UPDATE secrets SET sync_generation = (SELECT generation FROM sync_generations g WHERE g.org_id = secrets.org_id)
        WHERE id = NEW.secret_id;
END;

CREATE TRIGGER secret_components_sync_on_delete AFTER DELETE ON secret_components
BEGIN
    INSERT INTO sync_generations (org_id, generation) SELECT org_id, 1 FROM secrets WHERE id = OLD.secret_id
        ON CONFLICT (org_id) DO UPDATE SET generation = generation + 1;
    UPDATE secrets SET sync_generation = (SELECT generation FROM sync_generations g WHERE g.org_id = secrets.org_id)
        WHERE id = OLD.secret_id;
END;

CREATE TRIGGER personal_secret_keys_sync_on_insert AFTER INSERT ON personal_secret_keys
BEGIN
    INSERT INTO sync_generations (org_id, generation) SELECT org_id, 1 FROM secrets WHERE id = NEW.secret_id
        ON CONFLICT (org_id) DO UPDATE SET generation = generation + 1;
    UPDATE secrets SET sync_generation = (SELECT generation FROM sync_generations g WHERE g.org_id = secrets.org_id)
        WHERE id = NEW.secret_id;
END;

CREATE TRIGGER personal_secret_keys_sync_on_delete AFTER DELETE ON personal_secret_keys
BEGIN
    INSERT INTO sync_generations (org_id, generation) SELECT org_id, 1 FROM secrets WHERE id = OLD.secret_id
        ON CONFLICT (org_id) DO UPDATE SET generation = generation + 1;
    UPDATE secrets SET sync_generation = (SELECT generation FROM sync_generations g WHERE g.org_id = secrets.org_id)
        WHERE id = OLD.secret_id;
END;

-- What every sync reads of the secrets that are not simply active: found
-- among those, not by reading the whole organization's.
CREATE INDEX secrets_not_active ON secrets (org_id, name) WHERE lifecycle <> 'active';
CREATE INDEX secret_versions_deactivated ON secret_versions (secret_id) WHERE deactivated_at IS NOT NULL;
