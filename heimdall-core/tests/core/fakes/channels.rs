use super::*;

/// Notification channels in memory: names unique, and recent deliveries
/// a test adds.
#[derive(Default)]
pub struct MemoryChannels {
    channels: Mutex<Vec<Channel>>,
    pub deliveries: Mutex<Vec<Delivery>>,
    events: Mutex<Vec<NewEvent>>,
}

impl MemoryChannels {
    pub fn channels(&self) -> Vec<Channel> {
        self.channels.lock().unwrap().clone()
    }

    pub fn events(&self) -> Vec<(AuditAction, String)> {
        self.events.lock().unwrap().iter().map(|e| (e.action, e.target.clone())).collect()
    }
}

#[async_trait]
impl ChannelStore for MemoryChannels {
    async fn create_channel(&self, channel: &Channel, event: NewEvent) -> StoreResult<()> {
        let mut channels = self.channels.lock().unwrap();
        if channels.iter().any(|c| c.org_id == channel.org_id && c.name == channel.name) {
            return Err(StoreError::AlreadyExists("notification channel"));
        }
        channels.push(channel.clone());
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_channels(&self, org: OrgId) -> StoreResult<Vec<Channel>> {
        Ok(self.channels.lock().unwrap().iter().filter(|c| c.org_id == org).cloned().collect())
    }

    async fn delete_channel(&self, org: OrgId, key: &str, event: NewEvent) -> StoreResult<Channel> {
        let mut channels = self.channels.lock().unwrap();
        let named = |c: &Channel| c.org_id == org && (c.id == key || c.name == key);
        let at = channels.iter().position(named).ok_or(StoreError::NotFound("notification channel"))?;
        self.events.lock().unwrap().push(event);
        Ok(channels.remove(at))
    }

    async fn update_channel(&self, channel: &Channel, event: NewEvent) -> StoreResult<()> {
        let mut channels = self.channels.lock().unwrap();
        if channels.iter().any(|c| c.id != channel.id && c.name == channel.name) {
            return Err(StoreError::AlreadyExists("notification channel"));
        }
        let stored = channels
            .iter_mut()
            .find(|c| c.id == channel.id)
            .ok_or(StoreError::NotFound("notification channel"))?;
        *stored = channel.clone();
        self.events.lock().unwrap().push(event);
        Ok(())
    }

    async fn list_deliveries(&self, _org: OrgId, limit: u32) -> StoreResult<Vec<Delivery>> {
        Ok(self.deliveries.lock().unwrap().iter().take(limit as usize).cloned().collect())
    }
}
