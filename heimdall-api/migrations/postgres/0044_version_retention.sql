-- How long the writer of a version asked the version before it to stay
-- readable in the Agents' stores (seconds; 0: not at all). Versions from
-- before this column ask for nothing.
ALTER TABLE secret_versions ADD COLUMN keep_previous_seconds BIGINT NOT NULL DEFAULT 0;
