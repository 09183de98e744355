-- A tombstone written by retention: the version was replaced by a newer
-- one and its writer's overlap is over (its ciphertext is gone, as for a
-- deactivated version; reads answer VERSION_SUPERSEDED).
ALTER TABLE secret_values ADD COLUMN superseded INTEGER NOT NULL DEFAULT 0
    CHECK (superseded IN (0, 1) AND (superseded = 0 OR deactivated = 1));
