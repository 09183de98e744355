-- A webhook URL may carry the receiver's credential in its path: it is
-- kept sealed under the API's notifications.key (`sealed_url`); `url`
-- holds its scheme and host only, for showing. A channel made before this
-- has no sealed URL: its deliveries fail until it is made again.
ALTER TABLE notification_channels ADD COLUMN sealed_url TEXT NOT NULL DEFAULT '';
