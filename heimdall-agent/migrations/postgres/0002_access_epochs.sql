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
    last_seq BIGINT NOT NULL CHECK (last_seq >= 0)
);

CREATE TABLE access_legacy_counter (
    id       BIGINT PRIMARY KEY CHECK (id = 1),
    last_seq BIGINT NOT NULL
);
INSERT INTO access_legacy_counter (id, last_seq) SELECT 1, last_seq FROM access_counter WHERE last_seq > 0;

ALTER TABLE access_records ADD COLUMN epoch TEXT NOT NULL DEFAULT 'legacy';
ALTER TABLE access_records ALTER COLUMN epoch DROP DEFAULT;
ALTER TABLE access_records DROP CONSTRAINT access_records_pkey;
ALTER TABLE access_records ADD PRIMARY KEY (served_by, epoch, seq);
DROP TABLE access_counter;
