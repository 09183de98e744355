//! The sync answer at scale: an Agent that holds `--secrets` values
//! reports its whole inventory and a batch of reads, and is told who may
//! read what. Three calls on the loaded organization — knowing no
//! generation (the whole list of secrets), knowing the current one (an
//! empty delta), and after one secret was created (a delta of one) — each
//! against the same Agent call on an organization with no secrets and an
//! empty inventory, interleaved (A B A B), on two APIs over PostgreSQL
//! (127.0.0.1:5432, or `HEIMDALL_TEST_POSTGRES_URL`). Prints p50 and p99 of
//! each and the ratios; asserts nothing about time.
//!
//! ```sh
//! cargo bench -p heimdall-api --features testing --bench sync_answer -- --secrets 10000 --rounds 20
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)] // bench code: fail loudly at the first surprise

use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use heimdall_api::testing::{TestApi, TestDatabase};
use serde_json::{json, Value};

#[derive(Debug, Parser)]
#[command(
    name = "sync_answer",
    about = "The Agent sync answer with many secrets, against an empty organization"
)]
struct Args {
    /// Secrets in the loaded organization, all held by its Agent.
    #[arg(long, default_value_t = 10_000)]
    secrets: usize,
    /// Values the loaded side's Agent holds (its inventory); default: one per secret.
    #[arg(long)]
    held: Option<usize>,
    /// Reads reported in each sync.
    #[arg(long, default_value_t = 100)]
    records: usize,
    /// Syncs measured on each side, alternating.
    #[arg(long, default_value_t = 20)]
    rounds: usize,
    /// Ignored: `cargo bench` passes it to every bench.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One side: an API on its own database, an enrolled Agent on its channel.
struct Side {
    api: TestApi,
    people: reqwest::Client,
    agent: reqwest::Client,
    environment: String,
    /// The inventory this Agent reports on every sync.
    inventory: Vec<Value>,
    next_seq: i64,
    /// Secrets created during the run, one before each "after one change".
    created: usize,
}

impl Side {
    async fn new(secrets: usize, held: usize) -> Self {
        let api = TestApi::start(TestDatabase::postgres().await).await;
        let people = reqwest::Client::new();
        let owner = api.owner_token.clone();
        let post = |path: &str, body: Value| {
            let request = people.post(format!("{}{path}", api.url)).bearer_auth(&owner).json(&body);
            async move {
                let resp = request.send().await.expect("request");
                assert!(
                    resp.status().is_success(),
                    "{}: {}",
                    resp.status(),
                    resp.text().await.unwrap_or_default()
                );
                resp.json::<Value>().await.expect("JSON")
            }
        };
        let environment =
            post("/v1/environments", json!({ "name": "prod" })).await["id"].as_str().unwrap().to_owned();
        let (agent, _) = api.enroll_agent(&owner, "edge-1").await;
        post("/v1/environments/prod/agents", json!({ "agent": "edge-1" })).await;

        // The secrets, 8 requests at a time, as people would make them;
        // statistics refreshed after the first thousand (as autovacuum
        // would), or each creation scans the table with a plan made empty.
        let first = secrets.min(1000);
        create_secrets(&people, &api, 0..first).await;
        analyze(&api).await;
        create_secrets(&people, &api, first..secrets).await;
        let inventory = (0..held.min(secrets))
            .map(|i| json!({ "secret": format!("s{i:06}"), "environment": environment, "version": 1, "deactivated": false }))
            .collect();
        Side { api, people, agent, environment, inventory, next_seq: 1, created: 0 }
    }

    /// [`analyze`] on this side's database.
    async fn analyze(&self) {
        analyze(&self.api).await;
    }

    /// Creates one more secret, as a person would between two syncs.
    async fn change_one(&mut self) {
        self.created += 1;
        let resp = self
            .people
            .post(format!("{}/v1/secrets", self.api.url))
            .bearer_auth(&self.api.owner_token)
            .json(&json!({ "name": format!("changed-{:06}", self.created) }))
            .send()
            .await
            .expect("create secret");
        assert_eq!(resp.status().as_u16(), 201, "creating a secret");
    }

    /// One sync with `records` new reads, saying the Agent holds the
    /// secrets through `known`; how long until its whole answer was read,
    /// and the generation it is complete through.
    async fn sync(&mut self, records: usize, known: Option<i64>) -> (Duration, i64) {
        let reads: Vec<Value> = (0..records)
            .map(|k| {
                let seq = self.next_seq + k as i64;
                json!({
                    "seq": seq,
                    "accessor": format!("reader{}@example.com", seq % 20),
                    "at": "2026-12-01T10:00:00Z",
                    "secret": "s000000",
                    "environment": self.environment,
                    "version": 1,
                    "from": format!("10.0.0.{}", seq % 20),
                })
            })
            .collect();
        self.next_seq += records as i64;
        // As today's Agent asks: current versions less what it reported.
        let mut body = json!({ "epoch": "bench", "records": reads, "inventory": self.inventory,
                               "current_omits_held": true });
        if let Some(known) = known {
            body["secrets_known"] = json!(known);
        }
        let began = Instant::now();
        let resp = self
            .agent
            .post(format!("{}/v1/agent/sync", self.api.agent_url))
            .json(&body)
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let answer = resp.bytes().await.unwrap();
        let took = began.elapsed();
        assert!(status.is_success(), "sync: {status} {}", String::from_utf8_lossy(&answer));
        let answer: Value = serde_json::from_slice(&answer).unwrap();
        if known.is_some() {
            assert!(answer["secrets_since"].is_i64(), "a delta was asked for and not given");
        }
        (took, answer["secrets_generation"].as_i64().expect("a generation"))
    }
}

/// Creates the secrets numbered `names`, 8 requests at a time.
async fn create_secrets(people: &reqwest::Client, api: &TestApi, names: std::ops::Range<usize>) {
    let names = Arc::new(std::sync::Mutex::new(names));
    let mut creators = Vec::new();
    for _ in 0..8 {
        let (names, people, url, owner) =
            (names.clone(), people.clone(), api.url.clone(), api.owner_token.clone());
        creators.push(tokio::spawn(async move {
            loop {
                let Some(i) = names.lock().unwrap().next() else { return };
                let resp = people
                    .post(format!("{url}/v1/secrets"))
                    .bearer_auth(&owner)
                    .json(&json!({ "name": format!("s{i:06}") }))
                    .send()
                    .await
                    .expect("create secret");
                assert_eq!(resp.status().as_u16(), 201, "creating a secret");
            }
        }));
    }
    for creator in creators {
        creator.await.unwrap();
    }
}

/// Refreshes the database's statistics (`ANALYZE`), which also makes every
/// pooled connection plan its statements again.
async fn analyze(api: &TestApi) {
    sqlx::any::install_default_drivers();
    let pool = sqlx::AnyPool::connect(api.database.url()).await.unwrap();
    sqlx::query("ANALYZE").execute(&pool).await.unwrap();
    pool.close().await;
}

fn percentile(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 * q) as usize).min(sorted.len() - 1);
    sorted[i].as_secs_f64() * 1000.0
}

fn main() {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let began = Instant::now();
        let mut empty = Side::new(0, 0).await;
        let mut loaded = Side::new(args.secrets, args.held.unwrap_or(args.secrets)).await;
        loaded.analyze().await;
        eprintln!("seeded {} secrets in {:.1} s", args.secrets, began.elapsed().as_secs_f64());
        // The first syncs of each write the inventory and start the epoch.
        empty.sync(args.records, None).await;
        let (_, mut known) = loaded.sync(args.records, None).await;
        // Statistics as autovacuum would keep them in a deployment (it may
        // be off on a test machine): plans made on an empty table scan it.
        for side in [&empty, &loaded] {
            side.analyze().await;
        }
        let (mut a, mut whole, mut unchanged, mut one) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..args.rounds {
            a.push(empty.sync(args.records, None).await.0);
            whole.push(loaded.sync(args.records, None).await.0);
            a.push(empty.sync(args.records, None).await.0);
            let (took, through) = loaded.sync(args.records, Some(known)).await;
            unchanged.push(took);
            known = through;
            loaded.change_one().await;
            a.push(empty.sync(args.records, None).await.0);
            let (took, through) = loaded.sync(args.records, Some(known)).await;
            one.push(took);
            known = through;
        }
        for list in [&mut a, &mut whole, &mut unchanged, &mut one] {
            list.sort();
        }
        println!("sync answer, {} reads reported per sync, {} rounds interleaved", args.records, args.rounds);
        println!(
            "  empty organization                : p50 {:7.1} ms  p99 {:7.1} ms",
            percentile(&a, 0.5),
            percentile(&a, 0.99)
        );
        let held = loaded.inventory.len();
        for (what, list) in [("whole list", &whole), ("unchanged", &unchanged), ("one change", &one)] {
            println!(
                "  {:>6} secrets, {held:>6} held, {what:<10}: p50 {:7.1} ms  p99 {:7.1} ms  (p50 {:.1}x empty)",
                args.secrets,
                percentile(list, 0.5),
                percentile(list, 0.99),
                percentile(list, 0.5) / percentile(&a, 0.5),
            );
        }
        println!(
            "  one change / unchanged p50: {:.2}",
            percentile(&one, 0.5) / percentile(&unchanged, 0.5)
        );
    });
}
