-- A deleted secret's name can be created again: the deleted row keeps its
-- name here and gives up `name` (set to `<name>#deleted-<id>`, which no
-- live name can be), so the (org_id, name) key stays unique.
ALTER TABLE secrets ADD COLUMN deleted_name TEXT;
