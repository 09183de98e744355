//! `GET /metrics` (Prometheus text format) on an address of its own, off
//! unless `[metrics] listen` is set: reads served and refused (by error
//! code), how many records each commit of the access trail holds and how
//! long it takes, jobs run (by operation and outcome, with their
//! Terraform time), and how old the policy snapshot is. No label carries a
//! secret's name, a person or an input: codes, operations and outcomes only.

use std::sync::Arc;

use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use heimdall_core::clock::Clock;
use heimdall_core::ErrorCode;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use crate::access::SharedPolicy;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReadLabels {
    /// `served` or `refused`.
    outcome: &'static str,
    /// The refusal's code; `none` when served.
    code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    operation: String,
    /// `completed` or `failed`.
    outcome: &'static str,
}

#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    reads: Family<ReadLabels, Counter>,
    commit_records: Histogram,
    commit_seconds: Histogram,
    jobs: Family<JobLabels, Histogram>,
    policy_age: Gauge<f64, std::sync::atomic::AtomicU64>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("heimdall_agent");
        let reads = Family::<ReadLabels, Counter>::default();
        registry.register("reads", "Value reads, served or refused (by error code)", reads.clone());
        let commit_records = Histogram::new([1.0, 2.0, 5.0, 10.0, 25.0, 50.0, 99.0]);
        registry.register(
            "access_commit_records",
            "Access records per commit (group commit)",
            commit_records.clone(),
        );
        let commit_seconds = Histogram::new(exponential_buckets(0.0005, 2.0, 14));
        registry.register(
            "access_commit_seconds",
            "Time to commit a group of access records",
            commit_seconds.clone(),
        );
        let jobs = Family::<JobLabels, Histogram>::new_with_constructor(job_buckets as fn() -> Histogram);
        registry.register(
            "job_seconds",
            "Time to run a job's Terraform, by operation and outcome",
            jobs.clone(),
        );
        let policy_age = Gauge::<f64, std::sync::atomic::AtomicU64>::default();
        registry.register(
            "policy_age_seconds",
            "Age of the policy snapshot reads are decided with",
            policy_age.clone(),
        );
        Self { registry, reads, commit_records, commit_seconds, jobs, policy_age }
    }
}

fn job_buckets() -> Histogram {
    // 0.5 s to about 68 min.
    Histogram::new(exponential_buckets(0.5, 2.0, 14))
}

impl Metrics {
    /// `count` reads served, or one refused with `code`.
    pub fn reads(&self, refused: Option<ErrorCode>, count: usize) {
        let labels = match refused {
            Some(code) => ReadLabels { outcome: "refused", code: code.as_str() },
            None => ReadLabels { outcome: "served", code: "none" },
        };
        self.reads.get_or_create(&labels).inc_by(count as u64);
    }

    /// One commit of `records` access records, which took `seconds`.
    pub fn committed(&self, records: usize, seconds: f64) {
        self.commit_records.observe(records as f64);
        self.commit_seconds.observe(seconds);
    }

    /// A job's Terraform ran for `seconds`.
    pub fn job(&self, operation: impl std::fmt::Display, completed: bool, seconds: f64) {
        let labels = JobLabels {
            operation: operation.to_string(),
            outcome: if completed { "completed" } else { "failed" },
        };
        self.jobs.get_or_create(&labels).observe(seconds);
    }
}

/// What the scrape reads besides the counters.
#[derive(Clone, Debug)]
pub struct Scrape {
    pub metrics: Arc<Metrics>,
    pub policy: SharedPolicy,
    pub clock: Arc<dyn Clock>,
}

async fn scrape(State(state): State<Scrape>) -> Response {
    let age = state.policy.current().map(|p| (state.clock.now() - p.received_at()).as_seconds_f64());
    // No snapshot yet: as old as can be, so an alert on the age fires.
    state.metrics.policy_age.set(age.unwrap_or(f64::INFINITY));
    heimdall_tls::metrics::scrape_response(&state.metrics.registry)
}

pub fn router(state: Scrape) -> Router {
    Router::new().route("/metrics", get(scrape)).with_state(state)
}
