//! The one clock every process of a trial writes with: the machine's `CLOCK_MONOTONIC`, which all
//! processes on one kernel share (a `std::time::Instant` reads the same clock but does not let its
//! value cross a process boundary).

/// Nanoseconds of the machine's monotonic clock: the one the client adapters stamp with.
pub use lockbench_clients::monotonic_ns;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_counts_nanoseconds() {
        let a = monotonic_ns();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let b = monotonic_ns();
        assert!(b - a >= 20_000_000, "{a} -> {b}");
    }
}
