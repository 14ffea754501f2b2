//! What the model tests (heartbeat, calibrate, check) share: the binary, its JSON, the one-line
//! refusal of bad input, and deterministic draws.
#![allow(dead_code)] // each test crate uses its own part

pub mod lab;

use assert_cmd::Command;
use serde_json::Value;

pub fn lockbench() -> Command {
    Command::cargo_bin("lockbench").unwrap()
}

/// Runs lockbench, which must succeed, and parses its stdout as JSON.
pub fn json_of(args: &[&str]) -> Value {
    let out = lockbench().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout is JSON")
}

/// Runs lockbench expecting bad input refused: exit code 2 and one line on stderr holding every
/// fragment.
pub fn refused(args: &[&str], fragments: &[String]) {
    let out = lockbench().args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr}");
    for f in fragments {
        assert!(stderr.contains(f.as_str()), "{args:?}: {stderr} lacks {f}");
    }
}

/// Deterministic uniform draws in (0, 1): splitmix64.
pub struct Draws(pub u64);

impl Draws {
    pub fn next(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
}
