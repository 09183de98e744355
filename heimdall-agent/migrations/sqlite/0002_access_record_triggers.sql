-- On SQLite a group commit of access records is ONE multi-row INSERT,
-- which is one statement and so one transaction (one round trip to the
-- connection, one WAL fsync). These triggers keep the counter row in step
-- inside that statement and refuse any number but the next one: a refused
-- row aborts the whole statement, counter updates included, so the
-- sequence stays gapless by construction.
CREATE TRIGGER access_records_in_sequence BEFORE INSERT ON access_records
WHEN NEW.seq <> (SELECT last_seq FROM access_counter WHERE id = 1) + 1
BEGIN
    SELECT RAISE(ABORT, 'access record out of sequence');
END;

CREATE TRIGGER access_records_advance_counter AFTER INSERT ON access_records
BEGIN
    UPDATE access_counter SET last_seq = NEW.seq WHERE id = 1;
END;
