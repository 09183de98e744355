-- The environments a secret's access log has reads in, kept as the reads
-- are stored: listing them was a DISTINCT over every read of the secret
-- (seconds for a secret read millions of times).
CREATE TABLE access_log_environments (
    org_id      TEXT NOT NULL REFERENCES organizations (id),
    secret_name TEXT NOT NULL,
    environment TEXT NOT NULL,
    PRIMARY KEY (org_id, secret_name, environment)
);
INSERT INTO access_log_environments (org_id, secret_name, environment)
    SELECT DISTINCT org_id, secret_name, environment FROM access_records;
