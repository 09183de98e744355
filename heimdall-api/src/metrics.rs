//! `GET /metrics` (Prometheus text format) on a listener of its own,
//! off by default (`serve --metrics-listen ADDR`): requests by route and
//! status with latency histograms, jobs by operation and status (queue
//! depth), how long a job waited to be claimed, jobs finished, and how far
//! Agents are behind the current versions (and the transfers offered).
//!
//! A label is a route *template* (`/v1/secrets/{key}`), a method, a status,
//! a job operation or status: never a path as requested, so no secret
//! name, email or input value reaches the scrape.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use heimdall_core::infra::{JobOperation, JobStatus};
use heimdall_core::ports::Store;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    /// Which listener: `people` or `agents`.
    listener: &'static str,
    route: String,
    method: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    listener: &'static str,
    route: String,
    method: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BehindLabels {
    /// The organization's id (never a name).
    org: String,
    /// `true` when behind longer than `heimdall_core::lagging::LAGGING_AFTER`.
    lagging: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SyncAnswerLabels {
    /// `delta` (the secrets changed since the Agent's generation) or `whole`.
    secrets: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct JobLabels {
    operation: String,
    status: String,
}

/// The API's metrics, shared by every request of this process.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<RouteLabels, Histogram>,
    jobs: Family<JobLabels, Gauge>,
    finished: Family<JobLabels, Counter>,
    claim_wait: Histogram,
    behind: Family<BehindLabels, Gauge>,
    transfers: Counter,
    sync_answers: Family<SyncAnswerLabels, Counter>,
}

fn seconds_buckets() -> Histogram {
    // 1 ms to about 33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("heimdall");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests by listener, route template, method and status",
            requests.clone(),
        );
        let latency =
            Family::<RouteLabels, Histogram>::new_with_constructor(seconds_buckets as fn() -> Histogram);
        registry.register(
            "http_request_duration_seconds",
            "Time to answer, by route template",
            latency.clone(),
        );
        let jobs = Family::<JobLabels, Gauge>::default();
        registry.register(
            "jobs",
            "Jobs queued or running now, by operation and status (all replicas)",
            jobs.clone(),
        );
        let finished = Family::<JobLabels, Counter>::default();
        registry.register(
            "jobs_finished",
            "Attempts that ended on this replica, by operation and outcome",
            finished.clone(),
        );
        let claim_wait = seconds_buckets();
        registry.register(
            "job_claim_wait_seconds",
            "From a job's queueing to an Agent's claim",
            claim_wait.clone(),
        );
        let behind = Family::<BehindLabels, Gauge>::default();
        registry.register(
            "secret_holdings_behind",
            "Current versions an assigned Agent lacks, by organization, as of its last Agent sync",
            behind.clone(),
        );
        let transfers = Counter::default();
        registry.register(
            "secret_transfers_planned",
            "Transfers of a current version from one Agent to another, offered in sync answers",
            transfers.clone(),
        );
        let sync_answers = Family::<SyncAnswerLabels, Counter>::default();
        registry.register(
            "sync_answers",
            "Agent sync answers, by whether their secrets were a delta or the whole list",
            sync_answers.clone(),
        );
        Self { registry, requests, latency, jobs, finished, claim_wait, behind, transfers, sync_answers }
    }
}

impl Metrics {
    /// A job was claimed `waited` after it was queued.
    pub fn claimed(&self, waited: time::Duration) {
        self.claim_wait.observe(waited.as_seconds_f64().max(0.0));
    }

    /// A sync found `behind` in `org` and offered `planned` transfers.
    pub fn convergence(
        &self,
        org: heimdall_core::ids::OrgId,
        behind: &[heimdall_core::lagging::Behind],
        planned: usize,
        now: time::OffsetDateTime,
    ) {
        let lagging = behind.iter().filter(|b| heimdall_core::lagging::is_lagging(b.since, now)).count();
        for (flag, count) in [("true", lagging), ("false", behind.len() - lagging)] {
            let labels = BehindLabels { org: org.to_string(), lagging: flag };
            self.behind.get_or_create(&labels).set(i64::try_from(count).unwrap_or(i64::MAX));
        }
        self.transfers.inc_by(u64::try_from(planned).unwrap_or(u64::MAX));
    }

    /// A sync answer carried its secrets as a delta or whole.
    pub fn sync_answer(&self, delta: bool) {
        let secrets = if delta { "delta" } else { "whole" };
        self.sync_answers.get_or_create(&SyncAnswerLabels { secrets }).inc();
    }

    /// An attempt ended as `status` (queued again, completed or failed).
    pub fn finished(&self, operation: JobOperation, status: JobStatus) {
        let labels = JobLabels { operation: operation.to_string(), status: status.to_string() };
        self.finished.get_or_create(&labels).inc();
    }
}

/// Counts and times one request, by the template of the route it matched.
async fn track(listener: &'static str, metrics: Arc<Metrics>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let method = request.method().as_str().to_owned();
    let began = Instant::now();
    let response = next.run(request).await;
    let status = response.status().as_u16();
    let labels = RouteLabels { listener, route: route.clone(), method: method.clone() };
    metrics.latency.get_or_create(&labels).observe(began.elapsed().as_secs_f64());
    metrics.requests.get_or_create(&RequestLabels { listener, route, method, status }).inc();
    response
}

/// `router` with every request counted as `listener`'s, when metrics are on.
pub fn layer<S: Clone + Send + Sync + 'static>(
    router: Router<S>,
    listener: &'static str,
    metrics: Option<Arc<Metrics>>,
) -> Router<S> {
    match metrics {
        Some(metrics) => {
            router.route_layer(axum::middleware::from_fn(move |request: Request, next: Next| {
                track(listener, metrics.clone(), request, next)
            }))
        }
        None => router,
    }
}

/// The scrape: the queue as the database has it now, then everything.
async fn scrape(State(state): State<Scrape>) -> Response {
    let Some(metrics) = state.metrics.clone() else {
        return (axum::http::StatusCode::NOT_FOUND, "metrics are off").into_response();
    };
    match state.store.count_active_jobs().await {
        Ok(counts) => {
            // Every operation in each active status reads 0 when none is
            // there: a series that vanishes cannot be alerted on.
            metrics.jobs.clear();
            for operation in JobOperation::ALL {
                for status in [JobStatus::Queued, JobStatus::Running] {
                    let labels = JobLabels { operation: operation.to_string(), status: status.to_string() };
                    metrics.jobs.get_or_create(&labels).set(0);
                }
            }
            for (operation, status, count) in counts {
                let labels = JobLabels { operation: operation.to_string(), status: status.to_string() };
                metrics.jobs.get_or_create(&labels).set(count);
            }
        }
        Err(e) => tracing::warn!(error = %e, "metrics: the job counts could not be read"),
    }
    heimdall_tls::metrics::scrape_response(&metrics.registry)
}

/// The metrics listener's one route.
pub fn router(metrics: Option<Arc<Metrics>>, store: Arc<dyn Store>) -> Router {
    Router::new().route("/metrics", get(scrape)).with_state(Scrape { metrics, store })
}

/// What the scrape reads: the counters, and the store for the queue.
#[derive(Clone)]
struct Scrape {
    metrics: Option<Arc<Metrics>>,
    store: Arc<dyn Store>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use heimdall_core::ids::{AgentId, CatalogId, OrgId};
    use heimdall_core::lagging::{Behind, LAGGING_AFTER};

    #[test]
    fn holdings_behind_are_counted_by_organization_and_lag_and_transfers_add_up() {
        let metrics = Metrics::default();
        let org = OrgId::from_uuid(uuid::Uuid::from_u128(7));
        let now = time::OffsetDateTime::UNIX_EPOCH + time::Duration::days(20_000);
        let gap = |since| Behind {
            agent: AgentId::from_uuid(uuid::Uuid::from_u128(1)),
            secret: "db-password".into(),
            environment: CatalogId::from_uuid(uuid::Uuid::from_u128(2)),
            current: 2,
            held: Some(1),
            since,
        };
        let old = now - LAGGING_AFTER - time::Duration::seconds(1);
        metrics.convergence(org, &[gap(now), gap(now), gap(old)], 3, now);
        metrics.convergence(org, &[gap(now), gap(old)], 2, now);
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &metrics.registry).unwrap();
        let line = |l: &str| text.lines().any(|x| x == l);
        let labels = |lagging| format!("{{org=\"{org}\",lagging=\"{lagging}\"}}");
        assert!(line(&format!("heimdall_secret_holdings_behind{} 1", labels("true"))), "{text}");
        assert!(
            line(&format!("heimdall_secret_holdings_behind{} 1", labels("false"))),
            "the last sync's: {text}"
        );
        assert!(line("heimdall_secret_transfers_planned_total 5"), "{text}");
        assert!(!text.contains("db-password"), "no secret name in a label");
    }
}
