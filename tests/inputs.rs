//! Every file lockbench reads goes through one bounded reader (`lockbench_core::input`): a device,
//! a named pipe or a directory is refused before it is opened, a file larger than its kind may be
//! is refused unread, each in one line naming the file and what was expected, exit 2. Before this,
//! `validate /dev/zero` never returned. And a name that becomes part of a file name is refused at
//! `validate`, not at the end of a run.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{BILLING, assert_refused, lockbench, write_file};

/// Runs `lockbench ARGS`, killed after 10 s (a read that never ends fails the test, it does not
/// hang it), and asserts a one-line refusal holding `fragments`.
fn refused_soon(args: &[&str], fragments: &[&str]) {
    let out = lockbench()
        .args(args)
        .timeout(Duration::from_secs(10))
        .output()
        .unwrap();
    assert_refused(&out, args, fragments);
}

fn fifo(dir: &Path) -> PathBuf {
    let path = dir.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success(), "mkfifo");
    path
}

/// A file of `bytes` comment bytes: valid TOML, CSV-ish, and too large.
fn oversized(dir: &Path, name: &str, bytes: usize) -> PathBuf {
    let mut text = vec![b'#'; bytes];
    text.push(b'\n');
    write_file(dir, name, &text)
}

#[test]
fn a_spec_that_is_a_device_a_pipe_or_too_large_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = fifo(dir.path());
    let big = oversized(dir.path(), "big.toml", 2 << 20);
    refused_soon(
        &["validate", "/dev/zero"],
        &[
            "/dev/zero",
            "not a regular file (a character device)",
            "workload spec",
        ],
    );
    let pipe_s = pipe.to_str().unwrap();
    refused_soon(&["validate", pipe_s], &[pipe_s, "a named pipe"]);
    refused_soon(&["simulate", pipe_s], &[pipe_s, "a named pipe"]);
    let big_s = big.to_str().unwrap();
    refused_soon(
        &["validate", big_s],
        &[big_s, "more than the 1048576 bytes a workload spec"],
    );
    let dir_s = dir.path().to_str().unwrap();
    refused_soon(&["validate", dir_s], &[dir_s, "a directory"]);
}

#[test]
fn a_config_and_observed_runs_are_read_the_same_way() {
    let dir = tempfile::tempdir().unwrap();
    let pipe = fifo(dir.path());
    let pipe_s = pipe.to_str().unwrap();
    refused_soon(
        &["bench", "--config", "/dev/zero", "--backend", "memory"],
        &["--config", "/dev/zero", "a character device"],
    );
    refused_soon(
        &["bench", "--config", pipe_s, "--backend", "memory"],
        &["--config", pipe_s, "a named pipe"],
    );
    refused_soon(
        &["check", BILLING, "--observed", pipe_s],
        &[pipe_s, "a named pipe", "observed"],
    );
    refused_soon(
        &["check", BILLING, "--observed", "/dev/zero"],
        &["/dev/zero", "a character device"],
    );
}

#[test]
fn a_results_directory_whose_file_is_a_pipe_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    // A real manifest, and its record a named pipe.
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("results/sample/bench/manifest.json"),
        results.join("manifest.json"),
    )
    .unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(results.join("results.json"))
        .status()
        .unwrap();
    assert!(made.success());
    let out = dir.path().join("report");
    refused_soon(
        &[
            "report",
            results.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        &["results.json", "a named pipe"],
    );
    assert!(!out.exists(), "nothing is written for a refused input");
}

#[test]
fn a_name_that_cannot_be_part_of_a_file_name_is_refused_at_validate() {
    let dir = tempfile::tempdir().unwrap();
    let billing = std::fs::read_to_string(BILLING).unwrap();
    for (name, from, to, field) in [
        (
            "up.toml",
            "name = \"billing\"",
            "name = \"../../../x\"",
            "workload.name",
        ),
        (
            "slash.toml",
            "name = \"billing\"",
            "name = \"a/b\"",
            "workload.name",
        ),
        (
            "step.toml",
            "name = \"charge_payment\"",
            "name = \"charge/payment\"",
            "steps[1].name",
        ),
        (
            "profile.toml",
            "name = \"baseline\"",
            "name = \"base\\u0007line\"",
            "profiles[0].name",
        ),
    ] {
        assert!(billing.contains(from), "{from}");
        let text = billing.replacen(from, to, 1);
        let path = write_file(dir.path(), name, text.as_bytes());
        let path_s = path.to_str().unwrap();
        refused_soon(
            &["validate", path_s],
            &[path_s, field, "can be part of a file name"],
        );
    }
}
