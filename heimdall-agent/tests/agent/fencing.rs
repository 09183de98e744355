//! A run never outlives its Agent's hold on the job: Terraform stops with
//! an Agent killed alone (its process group spared), and a run whose
//! Agent cannot reach the API stops before the API can hand the job on.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::World;

/// The command lines of the processes working in `dir` or below it (the
/// Terraform guard, Terraform, a `local-exec` command).
fn processes_in(dir: &Path) -> Vec<String> {
    let Ok(dir) = dir.canonicalize() else {
        return Vec::new(); // not made yet: the first job makes it
    };
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let path = entry.ok()?.path();
            path.file_name()?.to_str()?.parse::<u32>().ok()?;
            let cwd: PathBuf = std::fs::read_link(path.join("cwd")).ok()?;
            let cmdline = std::fs::read(path.join("cmdline")).ok()?;
            cwd.starts_with(&dir).then(|| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        })
        .collect()
}

/// Waits until the job's `local-exec` (`sleep N`) runs in the Agent's work
/// directory: Terraform is applying.
async fn wait_for_the_apply(w: &World, id: &str, work: &Path) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !processes_in(work).iter().any(|c| c.starts_with("sleep ")) {
        assert!(Instant::now() < deadline, "the apply never started: {:?}", w.jobs(id).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_killed_alone_takes_its_terraform_with_it() {
    // Under the small guard installed next to the Agent.
    killed_alone(None, "heimdall-terraform-guard ").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_without_the_small_guard_beside_it_guards_terraform_itself() {
    // The Agent's binary alone in a directory: it is its own guard.
    let alone = tempfile::tempdir().unwrap();
    let binary = alone.path().join("heimdall-agent");
    std::fs::copy(env!("CARGO_BIN_EXE_heimdall-agent"), &binary).unwrap();
    killed_alone(Some(&binary), "heimdall-agent __terraform-guard ").await;
}

/// Runs an apply on an Agent (from `binary`, else the built one), checks
/// the guard `guard` is around Terraform, kills the Agent alone, and
/// waits for nothing to be left working in its directory.
async fn killed_alone(binary: Option<&Path>, guard: &str) {
    let w = World::new().await;
    let config = w.enroll("agent-a").await;
    let work = config.with_file_name("work");
    let mut agent = match binary {
        Some(binary) => w.run_agent_binary(binary, &config, &[]),
        None => w.run_agent(&config),
    };
    let id = w.create("alone", "bucket", json!({ "bucket": "alone-bucket", "sleep_seconds": 40 })).await;
    wait_for_the_apply(&w, &id, &work).await;
    let running = processes_in(&work);
    assert!(running.iter().any(|c| c.contains("terraform apply")), "{running:?}");
    assert!(running.iter().any(|c| c.contains(guard)), "{running:?}");

    // SIGKILL to the Agent's process only, as the OOM killer sends it.
    agent.start_kill().unwrap();
    let _ = agent.wait().await;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = processes_in(&work);
        if left.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "still running after the Agent died: {left:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A TCP relay to the API's Agent channel that can be cut: open
/// connections reset, new ones closed at once (the TLS inside is the
/// Agent's and the API's own, end to end).
struct Relay {
    addr: std::net::SocketAddr,
    cut: Arc<AtomicBool>,
    open: Arc<Mutex<Vec<tokio::task::AbortHandle>>>,
}

impl Relay {
    async fn to(upstream: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (cut, open) = (Arc::new(AtomicBool::new(false)), Arc::new(Mutex::new(Vec::new())));
        let (is_cut, tasks) = (cut.clone(), open.clone());
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if is_cut.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let upstream = upstream.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut outbound) = tokio::net::TcpStream::connect(&upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    }
                });
                tasks.lock().unwrap().push(task.abort_handle());
            }
        });
        Relay { addr, cut, open }
    }

    fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
        for task in self.open.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_cut_off_from_the_api_stops_its_run_before_the_job_can_be_handed_on() {
    let w = World::new().await;
    let config = w.enroll("agent-a").await;
    let work = config.with_file_name("work");
    let real = w.api.agent_url.clone();
    let relay = Relay::to(real.trim_start_matches("https://").to_owned()).await;
    let text = std::fs::read_to_string(&config).unwrap();
    let line = format!("api_url = \"{real}\"");
    assert!(text.contains(&line), "{text}");
    std::fs::write(&config, text.replace(&line, &format!("api_url = \"https://{}\"", relay.addr))).unwrap();
    let mut agent = w.run_agent(&config);
    let id = w.create("cut-off", "bucket", json!({ "bucket": "cut-off-bucket", "sleep_seconds": 60 })).await;
    wait_for_the_apply(&w, &id, &work).await;

    relay.cut();
    let cut_at = Instant::now();
    while !processes_in(&work).is_empty() {
        // The run stops 20 s after the last renewal sent (here the claim,
        // a moment before the cut); the API hands the job on no earlier
        // than 30 s after it.
        assert!(cut_at.elapsed() < Duration::from_secs(25), "still applying: {:?}", processes_in(&work));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let stopped_after = cut_at.elapsed();
    // Not at the first failed heartbeat: a renewal is tried again meanwhile.
    assert!(stopped_after >= Duration::from_secs(8), "stopped after {stopped_after:?}");
    assert!(agent.try_wait().unwrap().is_none(), "the Agent itself runs on");
    let log = std::fs::read_to_string(config.with_extension("log")).unwrap();
    assert!(log.contains("stopping the run before its job is handed on"), "{log}");
    // Nothing of the run is left on disk (its credential files among it),
    // once the stopped run has been cleaned up (a moment after its
    // processes end).
    let left = || -> Vec<_> { std::fs::read_dir(&work).unwrap().flatten().map(|e| e.file_name()).collect() };
    let stopped = Instant::now();
    while !left().is_empty() && stopped.elapsed() < Duration::from_secs(5) {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(left().is_empty(), "the run's directory is still there: {:?}", left());
    let job = &w.jobs(&id).await[0];
    assert_eq!(job["status"], "running", "the API has not handed it on yet: {job}");
    agent.kill().await.unwrap();
}

/// Terraform gone, nothing it started outlives the guard: a command it
/// left running (a `local-exec` that backgrounds a process, or one still
/// running when Terraform died of its closed output as the Agent let go of
/// a fenced run) is killed when Terraform exits, not left to init.
#[test]
fn what_terraform_leaves_running_ends_with_its_guard() {
    use std::io::Read;
    use std::process::Stdio;
    let mut guard = std::process::Command::new(env!("CARGO_BIN_EXE_heimdall-terraform-guard"))
        .args(["/bin/sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!"])
        // Held open below: the Agent still holds the run.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let held = guard.stdin.take();
    let mut printed = String::new();
    guard.stdout.take().unwrap().read_to_string(&mut printed).unwrap();
    let sleep: u32 = printed.trim().parse().unwrap();
    // The guard ends when Terraform does, with its code.
    assert!(guard.wait().unwrap().success());
    let alive = || {
        std::fs::read_to_string(format!("/proc/{sleep}/stat"))
            .is_ok_and(|stat| stat.rsplit_once(") ").is_some_and(|(_, rest)| !rest.starts_with('Z')))
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let survived = alive();
    if survived {
        let _ = std::process::Command::new("kill").args(["-9", &sleep.to_string()]).status();
    }
    drop(held);
    assert!(!survived, "`sleep 60` (pid {sleep}) outlived the guard");
}
