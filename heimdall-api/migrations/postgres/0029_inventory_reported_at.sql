-- When each Agent last reported its inventory, kept once on the Agent:
-- a sync writes only the inventory rows that changed, so a row's own
-- reported_at is when that row was first reported.
ALTER TABLE agents ADD COLUMN inventory_reported_at BIGINT;
UPDATE agents SET inventory_reported_at =
    (SELECT MAX(i.reported_at) FROM agent_inventory i WHERE i.agent_id = agents.id);
