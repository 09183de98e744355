-- Where an account's state lives: s3 (every account before this), gcs or
-- azurerm; for azurerm, the storage account holding the container
-- (state_bucket). The OIDC fields per provider are in `auth` (JSON).
ALTER TABLE cloud_accounts ADD COLUMN state_backend TEXT NOT NULL DEFAULT 's3';
ALTER TABLE cloud_accounts ADD COLUMN state_storage_account TEXT;
