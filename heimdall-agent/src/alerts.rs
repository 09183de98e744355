//! What the Agent found wrong on its own side and tells the API at its
//! next sync, where it becomes an audit event (a sealed file copied back).
//! Held in memory until a sync carries it; a failed sync keeps it.

use std::sync::{Arc, Mutex};

use heimdall_wire::AgentAlert;

/// Most alerts kept waiting: a flood keeps the first.
const MAX_WAITING: usize = 100;

#[derive(Clone, Debug, Default)]
pub struct Alerts(Arc<Mutex<Vec<AgentAlert>>>);

impl Alerts {
    /// Keeps `alert` for the next sync (once, however often it is raised).
    pub fn raise(&self, alert: AgentAlert) {
        if let Ok(mut waiting) = self.0.lock() {
            if !waiting.contains(&alert) && waiting.len() < MAX_WAITING {
                waiting.push(alert);
            }
        }
    }

    /// What waits, taken out (a sync that fails puts it back).
    pub fn take(&self) -> Vec<AgentAlert> {
        self.0.lock().map(|mut waiting| std::mem::take(&mut *waiting)).unwrap_or_default()
    }

    pub fn put_back(&self, alerts: Vec<AgentAlert>) {
        for alert in alerts {
            self.raise(alert);
        }
    }
}
