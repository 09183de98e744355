//! The SQL store's handle and what every part of it shares: ids as UUID
//! text, times as microseconds since the epoch, errors as `StoreError`,
//! multi-row `VALUES` lists.

use heimdall_core::ports::{StoreError, StoreResult};
use sqlx::AnyPool;
use time::OffsetDateTime;

use super::Backend;

#[derive(Clone)]
pub struct SqlStore {
    pub(super) pool: AnyPool,
    pub(super) backend: Backend,
}

impl std::fmt::Debug for SqlStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore").field("backend", &self.backend).finish_non_exhaustive()
    }
}

impl SqlStore {
    pub(super) fn new(pool: AnyPool, backend: Backend) -> Self {
        Self { pool, backend }
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }
}

// ---- representation helpers -------------------------------------------------

pub(crate) fn to_micros(t: OffsetDateTime) -> i64 {
    // i64 microseconds cover ±292,000 years.
    i64::try_from(t.unix_timestamp_nanos() / 1_000).unwrap_or(i64::MAX)
}

pub(crate) fn from_micros(us: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(us) * 1_000).unwrap_or(OffsetDateTime::UNIX_EPOCH)
}

pub(crate) fn parse_id<T: std::str::FromStr>(raw: &str) -> StoreResult<T> {
    raw.parse().map_err(|_| StoreError::Backend("stored id is not a UUID".into()))
}

/// A stored SHA-256 (hex), parsed as every other one is.
pub(crate) fn parse_sha256(raw: &str) -> StoreResult<heimdall_core::Sha256Hex> {
    heimdall_core::Sha256Hex::parse(raw)
        .map_err(|_| StoreError::Backend("stored SHA-256 is not 64 hex digits".into()))
}

pub(crate) fn db_err(err: sqlx::Error) -> StoreError {
    tracing::error!(error = %err, "database error");
    StoreError::Backend(err.to_string())
}

pub(crate) fn is_unique_violation(err: &sqlx::Error) -> bool {
    err.as_database_error().is_some_and(|e| e.is_unique_violation())
}

/// Maps a unique violation to `AlreadyExists(what)`, anything else to `Backend`.
pub(crate) fn unique_as(what: &'static str) -> impl FnOnce(sqlx::Error) -> StoreError {
    move |err| if is_unique_violation(&err) { StoreError::AlreadyExists(what) } else { db_err(err) }
}

/// Rows per multi-row `INSERT`: a few thousand parameters, well under
/// SQLite's 32,766 and PostgreSQL's 65,535.
pub(crate) const ROWS_PER_INSERT: usize = 500;

/// `($1, $2, …), ($k+1, …), …`: the `VALUES` list of `rows` rows of
/// `columns` parameters each, so that many rows take one statement and
/// one round trip, not one each.
pub(crate) fn values_list(rows: usize, columns: usize) -> String {
    values_list_after(0, rows, columns)
}

/// [`values_list`] numbered after the statement's first `bound` parameters.
pub(crate) fn values_list_after(bound: usize, rows: usize, columns: usize) -> String {
    let mut sql = String::with_capacity(rows * columns * 5);
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..columns {
            if column > 0 {
                sql.push_str(", ");
            }
            sql.push_str(&format!("${}", bound + row * columns + column + 1));
        }
        sql.push(')');
    }
    sql
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_values_list_numbers_every_row_after_the_one_before() {
        assert_eq!(super::values_list(1, 2), "($1, $2)");
        assert_eq!(super::values_list(2, 3), "($1, $2, $3), ($4, $5, $6)");
        assert_eq!(super::values_list_after(1, 2, 2), "($2, $3), ($4, $5)");
    }
}
