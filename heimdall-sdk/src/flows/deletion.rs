//! Deleting a secret and waiting until no Agent holds a copy: the
//! deletion is done only when every holder has reported that it erased
//! it, and until then the secret still names its Components.

use std::time::{Duration, Instant};

use heimdall_core::secrets::SecretStatus;

use crate::{Client, Result};

use super::Waited;

const POLL: Duration = Duration::from_millis(500);

/// Starts deleting `key` (id or name) everywhere and waits up to `timeout`
/// for it to complete. `TimedOut` carries the secret as last seen: its
/// deletion goes on, and completes at its holders' next syncs.
pub async fn delete_secret_and_wait(
    client: &Client,
    key: &str,
    timeout: Duration,
) -> Result<Waited<heimdall_wire::Secret>> {
    let started = client.delete_secret(key, None).await?.secret;
    let id = started.id.to_string();
    let deadline = Instant::now() + timeout;
    let mut last = started;
    loop {
        if last.status == SecretStatus::Deleted {
            return Ok(Waited::Settled(last));
        }
        if Instant::now() >= deadline {
            return Ok(Waited::TimedOut(last));
        }
        tokio::time::sleep(POLL).await;
        last = match client.get_secret(&id).await {
            Ok(detail) => detail.secret,
            Err(error) if error.code() == Some(heimdall_core::ErrorCode::NotFound) => {
                return Ok(Waited::Settled(last));
            }
            Err(error) => return Err(error),
        };
    }
}
