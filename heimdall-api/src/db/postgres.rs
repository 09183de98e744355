//! PostgreSQL specifics: pool sizing and migrations.

use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;

pub(super) fn pool_options() -> AnyPoolOptions {
    super::base_options().max_connections(16)
}

pub(super) fn migrator() -> &'static Migrator {
    static MIGRATOR: Migrator = sqlx::migrate!("migrations/postgres");
    &MIGRATOR
}
