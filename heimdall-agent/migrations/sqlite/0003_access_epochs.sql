-- Each Agent numbers its own reads, within an epoch: a random id made when
-- its numbering starts in this store (a new store, or one found restored
-- from a backup). Agents that share one store each keep their own counter
-- and report only their own records; the API keys records by (Agent,
-- epoch, seq), so a numbering that starts over is told from a repeat.
--
-- Existing data: records keep their numbers under the epoch 'legacy', and
-- an Agent's first numbering in a store that has any continues the old
-- shared counter in that epoch (access_legacy_counter), so nothing is
-- reported twice or as a gap.

CREATE TABLE access_counters (
    agent_id TEXT PRIMARY KEY,
    epoch    TEXT NOT NULL,
    last_seq INTEGER NOT NULL CHECK (last_seq >= 0)
);

CREATE TABLE access_legacy_counter (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq INTEGER NOT NULL
);
INSERT INTO access_legacy_counter (id, last_seq) SELECT 1, last_seq FROM access_counter WHERE last_seq > 0;

CREATE TABLE access_records_by_epoch (
    served_by      TEXT NOT NULL,
    epoch          TEXT NOT NULL,
    seq            INTEGER NOT NULL CHECK (seq > 0),
    accessor       TEXT NOT NULL,
    accessed_at    INTEGER NOT NULL,
    secret         TEXT NOT NULL,
    environment_id TEXT NOT NULL,
    version        INTEGER NOT NULL,
    source         TEXT NOT NULL,
    PRIMARY KEY (served_by, epoch, seq)
);
INSERT INTO access_records_by_epoch
    (served_by, epoch, seq, accessor, accessed_at, secret, environment_id, version, source)
    SELECT served_by, 'legacy', seq, accessor, accessed_at, secret, environment_id, version, source FROM access_records;
DROP TABLE access_records;
DROP TABLE access_counter;
ALTER TABLE access_records_by_epoch RENAME TO access_records;

-- A group commit is one multi-row INSERT (one statement, one fsync). These
-- triggers keep each Agent's counter in step inside it and refuse any
-- number but its next one, in its current epoch: a refused row aborts the
-- whole statement, counter updates included, so no number is skipped.
CREATE TRIGGER access_records_in_sequence BEFORE INSERT ON access_records
WHEN NEW.seq <> COALESCE(
    (SELECT last_seq FROM access_counters WHERE agent_id = NEW.served_by AND epoch = NEW.epoch), -1) + 1
BEGIN
    SELECT RAISE(ABORT, 'access record out of sequence');
END;

CREATE TRIGGER access_records_advance_counter AFTER INSERT ON access_records
BEGIN
    UPDATE access_counters SET last_seq = NEW.seq WHERE agent_id = NEW.served_by AND epoch = NEW.epoch;
END;
