//! Terraform stops with its Agent.
//!
//! The Agent does not start Terraform itself but a guard,
//! `heimdall-terraform-guard TERRAFORM ARGS…` (a small binary installed
//! next to `heimdall-agent`; without it, the Agent's own binary started
//! as `heimdall-agent __terraform-guard TERRAFORM ARGS…`, which takes a
//! few milliseconds longer to start). The guard runs Terraform (standard
//! output and error go straight to the Agent) and reads a pipe whose
//! other end only the Agent holds. However the Agent goes — killed alone
//! with SIGKILL, by the OOM killer, or dropping a run it was fenced out
//! of — the kernel closes that pipe, and the guard kills Terraform and
//! everything it started (providers, `local-exec` commands), which it
//! keeps as its descendants by being their child subreaper. When Terraform
//! exits, whatever it left running is killed too before the guard exits. A job handed
//! on after its lease runs out then never races a Terraform of the
//! attempt before.
//!
//! Terraform stays in the Agent's process group, so a signal to the group
//! (a terminal's Ctrl-C, `kill -- -PID`) still reaches it directly.

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{ExitCode, Stdio};
use std::sync::OnceLock;

use rustix::process::{Pid, Signal};

/// The first argument that makes the Agent's binary a guard.
pub const ARG: &str = "__terraform-guard";

/// The guard's own binary, looked for next to the Agent's.
pub const BINARY: &str = "heimdall-terraform-guard";

/// The guard to start, and whether it needs [`ARG`] first.
static GUARD: OnceLock<(PathBuf, bool)> = OnceLock::new();

/// Called by the Agent's `main` before anything else: runs as the guard
/// and returns its exit code when started as one; otherwise makes every
/// Terraform the Agent starts from now on run under a guard.
pub fn main_or_enable() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(ARG.as_ref()) {
        return Some(guard_main(args.collect()));
    }
    if let Ok(exe) = std::env::current_exe() {
        let small = exe.with_file_name(BINARY);
        let _ = GUARD.set(if small.is_file() { (small, false) } else { (exe, true) });
    }
    None
}

/// A command that runs `terraform`: under the guard once
/// [`main_or_enable`] enabled it, else directly, killed when dropped.
/// Give it a piped standard input and keep that pipe open while the run
/// lasts: its end is what stops Terraform.
pub fn command(terraform: &Path) -> tokio::process::Command {
    match GUARD.get() {
        Some((guard, marked)) => {
            let mut command = tokio::process::Command::new(guard);
            if *marked {
                command.arg(ARG);
            }
            command.arg(terraform).stdin(Stdio::piped());
            command
        }
        None => {
            let mut command = tokio::process::Command::new(terraform);
            command.stdin(Stdio::null()).kill_on_drop(true);
            command
        }
    }
}

/// The guard itself: `args` are the program to run and its arguments.
pub fn guard_main(args: Vec<OsString>) -> ExitCode {
    let mut args = args.into_iter();
    let Some(program) = args.next() else {
        eprintln!("{BINARY}: no program to run");
        return ExitCode::from(2);
    };
    guard(&program, args.collect())
}

fn guard(program: &OsString, args: Vec<OsString>) -> ExitCode {
    // Orphans of Terraform (a provider, a `local-exec` command) become
    // this process's children, not init's: still ours to stop.
    let _ = rustix::process::set_child_subreaper(Some(rustix::process::getpid()));
    let mut child = match std::process::Command::new(program).args(args).stdin(Stdio::null()).spawn() {
        Ok(child) => child,
        Err(e) => {
            eprintln!("cannot run {}: {e}", Path::new(program).display());
            return ExitCode::from(127);
        }
    };
    std::thread::spawn(|| {
        let mut sink = [0u8; 64];
        let mut stdin = std::io::stdin().lock();
        while matches!(stdin.read(&mut sink), Ok(n) if n > 0) {}
        // The Agent let go of the run (or died): nothing it started lives on.
        kill_descendants();
        std::process::exit(137);
    });
    let waited = child.wait();
    // Terraform is gone; what it left running goes too (a backgrounded
    // `local-exec`, or one still running when Terraform died of its closed
    // output as the Agent let go of the run: exiting first would hand it
    // to init, beyond anyone's reach).
    kill_descendants();
    match waited {
        Ok(status) => {
            use std::os::unix::process::ExitStatusExt;
            let code = status.code().or_else(|| status.signal().map(|s| 128 + s)).unwrap_or(1);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Err(e) => {
            eprintln!("cannot wait for {}: {e}", Path::new(program).display());
            ExitCode::from(1)
        }
    }
}

/// SIGKILLs every living descendant of this process, found by their
/// parents in /proc (a process this one never started is never named), a
/// few rounds so that what a dying process forks meanwhile goes too.
fn kill_descendants() {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    for _ in 0..5 {
        let alive = descendants(me, &processes());
        if alive.is_empty() {
            return;
        }
        for pid in alive {
            if let Some(pid) = Pid::from_raw(pid) {
                let _ = rustix::process::kill_process(pid, Signal::KILL);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// (pid, parent pid, is a zombie) of every process in /proc.
fn processes() -> Vec<(i32, i32, bool)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|entry| {
            let pid: i32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            parse_stat(&stat).map(|(parent, zombie)| (pid, parent, zombie))
        })
        .collect()
}

/// The parent pid and whether the process is a zombie, from
/// `/proc/PID/stat`: "pid (comm) state ppid …", where comm may hold
/// spaces and parentheses, so the fields are read after the last `)`.
fn parse_stat(stat: &str) -> Option<(i32, bool)> {
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((parent, state == "Z"))
}

/// The living (not zombie) descendants of `root`.
fn descendants(root: i32, processes: &[(i32, i32, bool)]) -> Vec<i32> {
    let mut found = vec![root];
    let mut i = 0;
    while i < found.len() {
        let parent = found[i];
        let children: Vec<i32> = processes
            .iter()
            .filter(|(pid, ppid, _)| *ppid == parent && !found.contains(pid))
            .map(|p| p.0)
            .collect();
        found.extend(children);
        i += 1;
    }
    found
        .into_iter()
        .skip(1)
        .filter(|pid| processes.iter().any(|(p, _, zombie)| p == pid && !zombie))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_is_read_after_the_command_name() {
        assert_eq!(parse_stat("42 (terraform) S 7 42 7 0"), Some((7, false)));
        assert_eq!(parse_stat("43 (a b) (c)) Z 42 1"), Some((42, true)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn descendants_are_found_through_every_generation_and_only_they() {
        // 10 → 11 → 12 (a zombie) → 13; 20 is someone else's.
        let procs = [
            (10, 1, false),
            (11, 10, false),
            (12, 11, true),
            (13, 12, false),
            (20, 1, false),
            (21, 20, false),
        ];
        assert_eq!(descendants(10, &procs), vec![11, 13]);
        assert_eq!(descendants(20, &procs), vec![21]);
        assert!(descendants(13, &procs).is_empty());
    }
}
