-- How far each of an Agent's sealed files (its policy snapshot, its
-- program tokens) has been written: the generation bound into the file's
-- seal. A file older than this row is one copied back, and is refused.
CREATE TABLE sealed_generations (
    agent_id   TEXT NOT NULL,
    purpose    TEXT NOT NULL,
    generation BIGINT NOT NULL CHECK (generation >= 0),
    PRIMARY KEY (agent_id, purpose)
);
