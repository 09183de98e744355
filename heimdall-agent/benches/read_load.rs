//! A closed-loop load generator for audited secret reads, the one
//! `benches/secrets.sh` points at both the Heimdall Agent and OpenBao so
//! that both pay the same client, TLS stack and HTTP/1.1 keep-alive.
//!
//! `--concurrency` tasks share one client (one kept-alive connection
//! each); every task sends its next GET as soon as the previous answer's
//! body is read. The first `--warmup-secs` are not measured (handshakes,
//! caches); for the next `--duration-secs`, every request that completes
//! is counted and its latency (send → whole body) recorded in
//! microseconds. Any transport error, non-2xx answer, or 2xx body without
//! `--expect-substring` is an error, warm-up included.
//!
//! Prints one JSON line on stdout:
//! `{"target", "reads", "errors", "reads_per_sec", "p50_ms", "p99_ms", ...}`
//! (`ok_total` counts every successful read, warm-up included: what an
//! audit trail must have grown by). Exits 1 if there was any error or no
//! read.
//!
//! ```sh
//! cargo bench -p heimdall-agent --bench read_load -- --url https://127.0.0.1:8200/v1/secret/data/db \
//!     --ca ca.pem --header 'X-Vault-Token: root' --expect-substring s3cr3t
//! ```
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

#[derive(Debug, Parser)]
#[command(name = "read_load", about = "Closed-loop GET load with latency percentiles (one JSON line)")]
struct Args {
    /// The URL every request GETs.
    #[arg(long)]
    url: String,
    /// A label for the JSON line (default: the URL).
    #[arg(long)]
    target: Option<String>,
    /// Requests in flight at once (one task and one connection each).
    #[arg(long, default_value_t = 16)]
    concurrency: usize,
    /// How long to measure, after the warm-up.
    #[arg(long, default_value_t = 10.0)]
    duration_secs: f64,
    /// How long to send load before measuring.
    #[arg(long, default_value_t = 2.0)]
    warmup_secs: f64,
    /// The only trust root (PEM); without it, the system's roots.
    #[arg(long)]
    ca: Option<PathBuf>,
    /// Client certificate (PEM), with --key.
    #[arg(long, requires = "key")]
    cert: Option<PathBuf>,
    /// Client private key (PEM), with --cert.
    #[arg(long, requires = "cert")]
    key: Option<PathBuf>,
    /// `Name: value`, sent with every request (repeatable).
    #[arg(long = "header")]
    headers: Vec<String>,
    /// Every 2xx body must contain this, else the read is an error.
    #[arg(long)]
    expect_substring: Option<String>,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// What one task saw.
#[derive(Debug, Default)]
struct TaskStats {
    latencies_us: Vec<u32>,
    ok_total: u64,
    errors: u64,
}

/// The first few distinct error messages, for stderr.
#[derive(Debug, Default)]
struct ErrorSamples(Mutex<Vec<String>>);

impl ErrorSamples {
    fn add(&self, message: String) {
        let mut samples = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if samples.len() < 5 && !samples.contains(&message) {
            samples.push(message);
        }
    }
}

fn build_client(args: &Args) -> Result<reqwest::Client, String> {
    let read = |p: &PathBuf| std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()));
    let mut headers = HeaderMap::new();
    for h in &args.headers {
        let (name, value) =
            h.split_once(':').ok_or_else(|| format!("--header {h:?}: expected 'Name: value'"))?;
        let name =
            HeaderName::from_bytes(name.trim().as_bytes()).map_err(|e| format!("--header name: {e}"))?;
        let mut value = HeaderValue::from_str(value.trim()).map_err(|e| format!("--header value: {e}"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .default_headers(headers)
        .pool_max_idle_per_host(args.concurrency)
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30));
    if let Some(ca) = &args.ca {
        let ca = reqwest::Certificate::from_pem(&read(ca)?).map_err(|e| format!("--ca: {e}"))?;
        builder = builder.tls_built_in_root_certs(false).add_root_certificate(ca);
    }
    if let (Some(cert), Some(key)) = (&args.cert, &args.key) {
        let mut pem = read(cert)?;
        pem.push(b'\n');
        pem.extend_from_slice(&read(key)?);
        let identity = reqwest::Identity::from_pem(&pem).map_err(|e| format!("--cert/--key: {e}"))?;
        builder = builder.identity(identity);
    }
    builder.build().map_err(|e| format!("cannot build the HTTP client: {e}"))
}

/// An error and its causes, `a: b: c` (reqwest's own text omits them).
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// One GET, its body read in full and checked.
async fn read_once(client: &reqwest::Client, url: &str, expect: Option<&[u8]>) -> Result<(), String> {
    let resp = client.get(url).send().await.map_err(|e| format!("request failed: {}", chain(&e)))?;
    let status = resp.status();
    let body = resp.bytes().await.map_err(|e| format!("reading the body failed: {}", chain(&e)))?;
    if !status.is_success() {
        let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
        return Err(format!("HTTP {status}: {text}"));
    }
    if let Some(expect) = expect {
        if !body.windows(expect.len().max(1)).any(|w| w == expect) {
            return Err(format!(
                "HTTP {status}, but the body ({} bytes) lacks --expect-substring",
                body.len()
            ));
        }
    }
    Ok(())
}

/// Closed loop until `end`; counts what completes in `[measure_from, end]`.
async fn run_task(
    client: reqwest::Client,
    url: Arc<str>,
    expect: Arc<Option<Vec<u8>>>,
    measure_from: Instant,
    end: Instant,
    samples: Arc<ErrorSamples>,
) -> TaskStats {
    let mut stats = TaskStats::default();
    loop {
        let start = Instant::now();
        if start >= end {
            return stats;
        }
        let outcome = read_once(&client, &url, expect.as_deref()).await;
        let done = Instant::now();
        match outcome {
            Ok(()) => {
                stats.ok_total += 1;
                if done >= measure_from && done <= end {
                    let us = done.duration_since(start).as_micros();
                    stats.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
                }
            }
            Err(message) => {
                stats.errors += 1;
                samples.add(message);
            }
        }
    }
}

/// Nearest-rank percentile of sorted microseconds, in milliseconds.
fn percentile_ms(sorted_us: &[u32], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted_us.len() as f64).ceil() as usize;
    f64::from(sorted_us[rank.clamp(1, sorted_us.len()) - 1]) / 1000.0
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    if args.concurrency == 0 || args.duration_secs <= 0.0 || args.warmup_secs < 0.0 {
        eprintln!(
            "read_load: --concurrency and --duration-secs must be positive, --warmup-secs not negative"
        );
        std::process::exit(2);
    }
    let client = match build_client(&args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("read_load: {e}");
            std::process::exit(2);
        }
    };
    let expect = Arc::new(args.expect_substring.as_ref().map(|s| s.as_bytes().to_vec()));
    // One read first, so that a wrong URL, token or certificate says so at once.
    if let Err(e) = read_once(&client, &args.url, expect.as_deref()).await {
        eprintln!("read_load: the first read of {} failed: {e}", args.url);
        std::process::exit(1);
    }

    let url: Arc<str> = Arc::from(args.url.as_str());
    let samples = Arc::new(ErrorSamples::default());
    let measure_from = Instant::now() + Duration::from_secs_f64(args.warmup_secs);
    let end = measure_from + Duration::from_secs_f64(args.duration_secs);
    let tasks: Vec<_> = (0..args.concurrency)
        .map(|_| {
            tokio::spawn(run_task(
                client.clone(),
                url.clone(),
                expect.clone(),
                measure_from,
                end,
                samples.clone(),
            ))
        })
        .collect();
    let mut latencies = Vec::new();
    let (mut ok_total, mut errors) = (1u64, 0u64); // the first read above
    for task in tasks {
        match task.await {
            Ok(stats) => {
                latencies.extend(stats.latencies_us);
                ok_total += stats.ok_total;
                errors += stats.errors;
            }
            Err(e) => {
                eprintln!("read_load: a task failed: {e}");
                errors += 1;
            }
        }
    }
    latencies.sort_unstable();

    let reads = latencies.len() as u64;
    let mean_ms = if latencies.is_empty() {
        0.0
    } else {
        latencies.iter().map(|&us| f64::from(us)).sum::<f64>() / latencies.len() as f64 / 1000.0
    };
    let line = serde_json::json!({
        "target": args.target.as_deref().unwrap_or(&args.url),
        "reads": reads,
        "errors": errors,
        "reads_per_sec": round(reads as f64 / args.duration_secs, 1),
        "p50_ms": round(percentile_ms(&latencies, 50.0), 3),
        "p99_ms": round(percentile_ms(&latencies, 99.0), 3),
        "p999_ms": round(percentile_ms(&latencies, 99.9), 3),
        "max_ms": round(percentile_ms(&latencies, 100.0), 3),
        "mean_ms": round(mean_ms, 3),
        "ok_total": ok_total,
        "concurrency": args.concurrency,
        "duration_secs": args.duration_secs,
        "warmup_secs": args.warmup_secs,
    });
    println!("{line}");
    for message in samples.0.lock().unwrap_or_else(|e| e.into_inner()).iter() {
        eprintln!("read_load: error: {message}");
    }
    if errors > 0 || reads == 0 {
        eprintln!("read_load: {errors} error(s), {reads} measured read(s): failing");
        std::process::exit(1);
    }
}
