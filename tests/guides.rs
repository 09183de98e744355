//! Every command a guide under `docs/` shows runs against `heimdall dev`,
//! after the README's tour and in the guides' reading order, from a
//! directory where the repository's `examples/` and `tests/` and dev's
//! `.heimdall-dev/` are where the guides say: an `sh` block must exit 0,
//! a `console` block must print what it shows (`…` stands for anything).
//! A block fenced `sh not-run: why` (a production host, a system package)
//! is only parsed (`heimdall-cli`'s `every_command_the_docs_show_parses`),
//! and its reason is printed here.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: fail loudly at the first surprise

use std::path::Path;

use heimdall_e2e::{free_port, guide_blocks, readme_tour, repo_root, BlockKind, Dev, GuideBlock};

/// The guides in the order a reader meets them; each goes on from the
/// state the ones before it left.
const GUIDES: &[&str] = &[
    "concepts.md",
    "infrastructure.md",
    "secrets.md",
    "applications.md",
    "operations.md",
    "security.md",
    "api-and-sdk.md",
    "development.md",
    "configuration-as-code.md",
];

/// The guides' commands name the default dev port; the test's dev has its own.
fn localized(text: &str, port: u16) -> String {
    text.replace("127.0.0.1:7480", &format!("127.0.0.1:{port}"))
}

#[test]
fn every_guide_command_runs_against_heimdall_dev() {
    let mut on_disk: Vec<String> = std::fs::read_dir(repo_root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = GUIDES.iter().map(|g| (*g).to_owned()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "every guide is run here: add a new one to GUIDES");

    let tmp = tempfile::tempdir().unwrap();
    let (data, config, work) = (tmp.path().join("data"), tmp.path().join("config"), tmp.path().join("work"));
    std::fs::create_dir_all(&work).unwrap();
    for dir in ["examples", "tests"] {
        std::os::unix::fs::symlink(repo_root().join(dir), work.join(dir)).unwrap();
    }
    std::os::unix::fs::symlink(&data, work.join(".heimdall-dev")).unwrap();
    let port = free_port();
    let dev = Dev::start(&data, &config, port);
    for line in readme_tour() {
        let out = dev.sh(&line);
        assert!(
            out.status.success(),
            "README tour line failed: {line}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let (mut ran, mut not_run) = (0, Vec::new());
    for guide in GUIDES {
        for block in guide_blocks(guide) {
            if let Some(why) = &block.not_run {
                not_run.push(format!("{}: {why}", block.place));
                continue;
            }
            match block.kind {
                BlockKind::Sh => run_script(&dev, &work, &block, port),
                BlockKind::Console => run_transcript(&dev, &work, &block, port),
            }
            ran += 1;
        }
    }
    eprintln!("{ran} guide blocks ran against heimdall dev; {} only parsed:", not_run.len());
    for line in &not_run {
        eprintln!("  {line}");
    }
    assert!(ran > 0, "no guide block ran");
    assert!(dev.stop().success());
}

/// An `sh` block as one script (a `cd` or a variable carries to the next
/// line), stopping at the first command that fails.
fn run_script(dev: &Dev, work: &Path, block: &GuideBlock, port: u16) {
    let script = format!("set -eu\n{}", localized(&block.lines.join("\n"), port));
    let out = dev.sh_in(work, &script);
    assert!(
        out.status.success(),
        "{} failed:\n{script}\nstdout: {}\nstderr: {}",
        block.place,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A `console` block: each `$ ` command (a trailing `\` continues it) and
/// the lines after it, which its output (stdout, then stderr) must hold in
/// that order, `…` matching anything.
fn run_transcript(dev: &Dev, work: &Path, block: &GuideBlock, port: u16) {
    let mut steps: Vec<(String, Vec<String>)> = Vec::new();
    let mut continued = false;
    for line in &block.lines {
        let line = localized(line, port);
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push((command.to_owned(), Vec::new()));
        } else if let Some((command, _)) = steps.last_mut().filter(|_| continued) {
            command.push('\n');
            command.push_str(&line);
        } else if let Some((_, shown)) = steps.last_mut() {
            shown.push(line.clone());
        } else {
            panic!("{}: a console block starts with a `$ ` command", block.place);
        }
        continued = line.ends_with('\\');
    }
    for (command, shown) in steps {
        let out = dev.sh_in(work, &command);
        let printed =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let mut rest = printed.as_str();
        for line in shown.iter().filter(|l| !l.trim().is_empty()) {
            for piece in line.split('…').map(str::trim).filter(|p| !p.is_empty()) {
                let Some(at) = rest.find(piece) else {
                    panic!(
                        "{}: `{command}` did not print {piece:?} (of {line:?}) where shown:\n{printed}",
                        block.place
                    )
                };
                rest = &rest[at + piece.len()..];
            }
        }
    }
}
