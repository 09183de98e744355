-- Nothing on SQLite: it serves one API process, which wakes its own
-- waiting claims (PostgreSQL's 0024 makes replicas wake each other).
SELECT 1;
