//! `bench`'s table.

use lockbench_core::format_count;
use lockbench_core::records::bench::BenchRow;

use super::table::table;

/// The `bench` table: one row per backend, mode and contention level, latencies in microseconds.
pub fn bench_table(results: &[BenchRow]) -> String {
    let header = [
        "backend",
        "mode",
        "keys",
        "wait",
        "C",
        "ops",
        "errors",
        "acq P50",
        "P90",
        "P99",
        "P99.9",
        "max",
        "renew P50",
        "release P50",
        "handoff P50",
        "P99",
        "try fail",
        "req/grant",
        "fair",
        "ops/s",
    ];
    let us = |v: f64| format!("{v:.1}");
    let rows: Vec<Vec<String>> = results
        .iter()
        .map(|r| {
            vec![
                r.backend_through(),
                match r.rate_per_s {
                    Some(rate) => format!("open {rate}/s"),
                    None => r.mode.to_string(),
                },
                r.keys.to_string(),
                r.wait_mode.to_string(),
                r.contenders.to_string(),
                format_count(r.ops),
                format_count(r.errors),
                us(r.acquire_us.p50),
                us(r.acquire_us.p90),
                us(r.acquire_us.p99),
                us(r.acquire_us.p999),
                us(r.acquire_us.max),
                us(r.renew_us.p50),
                us(r.release_us.p50),
                if r.handoff_us.count == 0 {
                    "-".to_string()
                } else {
                    us(r.handoff_us.p50)
                },
                if r.handoff_us.count == 0 {
                    "-".to_string()
                } else {
                    us(r.handoff_us.p99)
                },
                format!("{:.1} %", r.try_fail_rate * 100.0),
                r.requests_per_grant
                    .map_or("-".to_string(), |n| format!("{n:.2}")),
                r.fairness_jain
                    .map_or("-".to_string(), |j| format!("{j:.3}")),
                format!("{:.0}", r.throughput_per_s),
            ]
        })
        .collect();
    let mut out = String::from(
        "latencies in microseconds; acquire includes waiting for the lock; handoff: from a release to the grant of a contender that was waiting for it; req/grant: requests sent to the server per grant (- = no server); fair: Jain's index of the contenders' grants (1 = equal shares, - = one contender or open loop)\n\n",
    );
    out.push_str(&table(&header, &rows, 4));
    out
}
