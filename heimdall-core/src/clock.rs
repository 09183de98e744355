//! Time is an input. Core never reads a clock: adapters pass `now` in, or
//! hand a [`Clock`] to code that needs several readings.

use std::sync::Mutex;

use time::OffsetDateTime;

pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> OffsetDateTime;
}

/// A clock that moves only when told to: for deterministic tests.
#[derive(Debug)]
pub struct ManualClock {
    now: Mutex<OffsetDateTime>,
}

impl ManualClock {
    pub fn new(start: OffsetDateTime) -> Self {
        Self { now: Mutex::new(start) }
    }

    pub fn advance(&self, by: time::Duration) {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> OffsetDateTime {
        *self.now.lock().unwrap_or_else(|e| e.into_inner())
    }
}
