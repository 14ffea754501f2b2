//! What an acquisition returns, and what a backend declares it can do.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use lockbench_core::{FencingSource, LockScope};
use serde::Serialize;

/// A held lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    /// The key as stored on the server (namespace included).
    pub key: String,
    /// Unique to this acquisition: renew and release check it.
    pub token: String,
    /// Monotonic per key across holders, where the backend can give one.
    pub fencing: Option<u64>,
    /// How long the lock outlives a holder that stops renewing (the validity, for Redlock).
    pub ttl: Duration,
    /// When the acquisition completed, by this process's clock.
    pub acquired_at: Instant,
}

/// What a backend declares about itself.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Capabilities {
    /// Where fencing tokens come from.
    pub fencing: FencingSource,
    /// True when the server frees the lock by itself after the TTL.
    pub native_ttl: bool,
    /// True when the server keeps a queue of waiters by design (a blocking advisory lock, a
    /// ZooKeeper predecessor watch).
    pub wait_queue: bool,
    /// True when this implementation's [`crate::LockBackend::acquire`] waits in that queue; false
    /// when it polls `try_acquire`.
    pub native_wait: bool,
    /// What the lock is tied to.
    pub scope: LockScope,
}

/// A token no other acquisition in any process will produce: process id, a per-process counter and
/// random bits, in hex (`1f2e-7-00c0ffee12345678`).
pub fn new_token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // Asked once: `getpid` is a system call on every call, on the acquisition's timed path.
    static PID: std::sync::LazyLock<u32> = std::sync::LazyLock::new(std::process::id);
    // Written digit by digit, not with `format!`, whose machinery cost more per acquisition than
    // the request's encoding (docs/PERFORMANCE.md, the Redis profile).
    let mut token = String::with_capacity(8 + 1 + 16 + 1 + 16);
    push_hex(&mut token, u64::from(*PID), 1);
    token.push('-');
    push_hex(&mut token, COUNTER.fetch_add(1, Ordering::Relaxed), 1);
    token.push('-');
    push_hex(&mut token, rand::random::<u64>(), 16);
    token
}

/// `value` in lowercase hex, at least `width` digits (zero-padded).
fn push_hex(out: &mut String, value: u64, width: usize) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - value.leading_zeros() as usize).div_ceil(4).max(width);
    for i in (0..digits).rev() {
        out.push(char::from(DIGITS[(value >> (4 * i) & 0xf) as usize]));
    }
}

/// `parts` end to end in a string of exactly their length: the names a backend builds per
/// operation (`namespace:lock:key`), without `format!` on the timed path (see [`new_token`]).
pub(crate) fn joined(parts: &[&str]) -> String {
    let mut name = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for part in parts {
        name.push_str(part);
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_digits_are_what_format_writes() {
        for value in [
            0,
            1,
            0xf,
            0x10,
            0xabc,
            u64::from(u32::MAX),
            1 << 60,
            u64::MAX,
        ] {
            for width in [1, 16] {
                let mut out = String::new();
                push_hex(&mut out, value, width);
                assert_eq!(out, format!("{value:0width$x}"), "{value} at width {width}");
            }
        }
    }

    #[test]
    fn tokens_are_pid_counter_random_and_differ() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        let parts: Vec<&str> = a.split('-').collect();
        assert_eq!(parts.len(), 3, "{a}");
        assert_eq!(parts[0], format!("{:x}", std::process::id()));
        assert_eq!(parts[2].len(), 16, "{a}");
        assert!(a.chars().all(|c| c == '-' || c.is_ascii_hexdigit()), "{a}");
    }

    #[test]
    fn joined_names_are_the_parts_in_order() {
        let name = joined(&["ns", ":lock:", "billing"]);
        assert_eq!(name, "ns:lock:billing");
        assert_eq!(name.capacity(), name.len());
    }
}
