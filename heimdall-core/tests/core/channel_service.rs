//! Notification channels' use cases (`notify::service`) against an
//! in-memory store: the webhook sealed under the channel's id and shown
//! by its host only, a change that changes nothing records nothing, every
//! event names the channel by id whatever key the caller used, and a
//! refusal stores nothing.

use std::sync::atomic::{AtomicBool, Ordering};

use heimdall_core::audit::AuditAction;
use heimdall_core::authz::Action;
use heimdall_core::notify::service;
use heimdall_core::{ApiError, ErrorCode};

use crate::fakes::{Ana, MemoryChannels};

/// What the adapter's key does, made visible: the id and the URL, joined.
fn seal(id: &str, url: &str) -> Result<String, ApiError> {
    Ok(format!("sealed({id},{url})"))
}

const HOOK: &str = "https://hooks.example.com/services/T0/B0/s3cr3t";

#[tokio::test]
async fn a_channel_keeps_its_webhook_sealed_and_every_event_names_it_by_id() {
    let (store, ana) = (MemoryChannels::default(), Ana::allowed_everything());
    let made = service::create(&store, &ana, ("c1".into(), "ops".into()), HOOK, seal).await.unwrap();
    assert_eq!(made.sealed_url, format!("sealed(c1,{HOOK})"));
    assert!(!made.url.contains("s3cr3t"), "shown by its host only: {}", made.url);

    let same = service::update(&store, &ana, "ops", (Some("ops".into()), None), seal).await.unwrap();
    assert_eq!(same, made, "nothing changes");
    let renamed = service::update(&store, &ana, "ops", (Some("oncall".into()), None), seal).await.unwrap();
    assert_eq!((renamed.id.as_str(), renamed.name.as_str()), ("c1", "oncall"));
    service::remove(&store, &ana, "oncall").await.unwrap();
    assert!(store.channels().is_empty());
    let named = |a| (a, "notification:c1".to_owned());
    let events = [
        named(AuditAction::NotificationCreated),
        named(AuditAction::NotificationUpdated),
        named(AuditAction::NotificationDeleted),
    ];
    assert_eq!(store.events(), events);
}

#[tokio::test]
async fn a_refused_or_bad_channel_is_not_stored_and_its_url_not_sealed() {
    let store = MemoryChannels::default();
    let sealed = AtomicBool::new(false);
    let watch = |id: &str, url: &str| {
        sealed.store(true, Ordering::SeqCst);
        seal(id, url)
    };
    let refused = Ana::refused(Action::NotificationWrite, None);
    let denied =
        service::create(&store, &refused, ("c1".into(), "ops".into()), HOOK, watch).await.unwrap_err();
    assert_eq!(denied.code, ErrorCode::Forbidden);
    let ana = Ana::allowed_everything();
    let with_password = "https://user:pw@hooks.example.com/x";
    let bad =
        service::create(&store, &ana, ("c1".into(), "ops".into()), with_password, watch).await.unwrap_err();
    assert_eq!(bad.code, ErrorCode::InvalidInput);
    assert!(!sealed.load(Ordering::SeqCst), "nothing was sealed for a refused channel");
    assert!(store.channels().is_empty());
    for limit in [0, 1001] {
        let out_of_range = service::deliveries(&store, &ana, Some(limit)).await.unwrap_err();
        assert_eq!(out_of_range.code, ErrorCode::InvalidInput);
    }
    assert!(service::deliveries(&store, &ana, None).await.unwrap().is_empty());
}
