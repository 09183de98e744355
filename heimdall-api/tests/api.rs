//! heimdall-api's integration tests, one binary. Each scenario runs on
//! SQLite (always) and on PostgreSQL at 127.0.0.1:5432 (or
//! HEIMDALL_TEST_POSTGRES_URL), each test in its own fresh database.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

#[path = "api/access.rs"]
mod access;
#[path = "api/account_changes.rs"]
mod account_changes;
#[path = "api/agents.rs"]
mod agents;
#[path = "api/at_risk.rs"]
mod at_risk;
#[path = "api/bodies.rs"]
mod bodies;
#[path = "api/bootstrap.rs"]
mod bootstrap;
#[path = "api/console.rs"]
mod console;
#[path = "api/console_sign_in.rs"]
mod console_sign_in;
#[path = "api/database_changes.rs"]
mod database_changes;
#[path = "api/database_tls.rs"]
mod database_tls;
#[path = "api/database_user_delete.rs"]
mod database_user_delete;
#[path = "api/databases.rs"]
mod databases;
#[path = "api/event_names.rs"]
mod event_names;
#[path = "api/http.rs"]
mod http;
#[path = "api/infra.rs"]
mod infra;
#[path = "api/inventory.rs"]
mod inventory;
#[path = "api/lagging.rs"]
mod lagging;

#[path = "api/leaks.rs"]
mod leaks;
#[path = "api/long_poll.rs"]
mod long_poll;
#[path = "api/metrics.rs"]
mod metrics;
#[path = "api/notifications.rs"]
mod notifications;
#[path = "api/openapi.rs"]
mod openapi;
#[path = "api/pages.rs"]
mod pages;
#[path = "api/policy_scope.rs"]
mod policy_scope;
#[path = "api/policy_update.rs"]
mod policy_update;
#[path = "api/queue.rs"]
mod queue;
#[path = "api/renames.rs"]
mod renames;
#[path = "api/replicas.rs"]
mod replicas;
#[path = "api/resource_abandon.rs"]
mod resource_abandon;
#[path = "api/resource_upgrade.rs"]
mod resource_upgrade;
#[path = "api/retention.rs"]
mod retention;
#[path = "api/schema_lifecycle.rs"]
mod schema_lifecycle;
#[path = "api/store_scenario.rs"]
mod store_scenario;
#[path = "api/support.rs"]
mod support;
#[path = "api/sync_delta.rs"]
mod sync_delta;
#[path = "api/tls.rs"]
mod tls;
#[path = "api/upgrades.rs"]
mod upgrades;
#[path = "api/versions.rs"]
mod versions;

/// Declares `name::sqlite` and `name::postgres` tests from one async fn
/// taking a `TestDatabase`.
#[macro_export]
macro_rules! on_every_backend {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn sqlite() {
                    super::$name(heimdall_api::testing::TestDatabase::sqlite().await).await;
                }
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn postgres() {
                    super::$name(heimdall_api::testing::TestDatabase::postgres().await).await;
                }
            }
        )+
    };
}
