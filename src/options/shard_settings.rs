//! What the shards of one run must share: each command's resolved settings by name, for
//! `lockbench merge` to compare one by one. Every struct is taken apart field by field, without
//! `..`, so that a new setting does not compile until it is either compared or said to be one a
//! shard may have of its own.

use std::collections::BTreeMap;

use lockbench_bench::BenchOptions;
use lockbench_locks::{BackendConfig, Redacted};

use super::{BenchSettings, SimulateSettings, SimulationSettings, TtlSettings};

type ShardSettings = BTreeMap<String, String>;

fn put(settings: &mut ShardSettings, name: &str, value: impl std::fmt::Debug) {
    settings.insert(name.to_string(), format!("{value:?}"));
}

impl SimulationSettings {
    fn shard_settings(&self, out: &mut ShardSettings) {
        let SimulationSettings {
            replays,
            seed,
            // A shard's own: how many cores it had, how it printed, where it wrote, which it is.
            threads: _,
            json: _,
            out: _,
            shard: _,
            engine,
        } = self;
        put(out, "replays", replays);
        put(out, "seed", seed);
        put(out, "engine", engine.name());
    }
}

impl SimulateSettings {
    /// The settings every shard of a split `simulate` shares.
    pub fn shard_settings(&self) -> ShardSettings {
        let SimulateSettings {
            // Compared by their text (the manifest's specs), not where each shard found them.
            specs: _,
            scales,
            profiles,
            simulation,
        } = self;
        let mut out = ShardSettings::new();
        put(&mut out, "scales", scales);
        put(&mut out, "profiles", profiles);
        simulation.shard_settings(&mut out);
        out
    }
}

impl TtlSettings {
    /// The settings every shard of a split `ttl` shares.
    pub fn shard_settings(&self) -> ShardSettings {
        let TtlSettings {
            spec: _,
            profile,
            target_scale,
            safety_factor,
            current_ttl,
            runs_per_year,
            max_lease_risk,
            accepted_double_runs_per_year,
            // A sharded ttl refuses --observed.
            observed: _,
            simulation,
        } = self;
        let mut out = ShardSettings::new();
        put(&mut out, "profile", profile);
        put(&mut out, "target scale", target_scale);
        put(&mut out, "safety factor", safety_factor);
        put(&mut out, "current TTL", current_ttl);
        put(&mut out, "runs per year", runs_per_year);
        put(&mut out, "max lease risk", max_lease_risk);
        put(
            &mut out,
            "accepted double runs a year",
            accepted_double_runs_per_year,
        );
        simulation.shard_settings(&mut out);
        out
    }
}

impl BenchSettings {
    /// The settings every shard of a split `bench` shares.
    pub fn shard_settings(&self) -> ShardSettings {
        let BenchSettings {
            backends,
            contenders,
            bench,
            json: _,
            out: _,
            // The servers and namespace it names are compared below; its path is the shard's.
            config_path: _,
            shard: _,
            // Compared as the shard record's start_at_unix_ms.
            start_at: _,
            // A split benchmark measures lockbench's own client only (the options refuse both).
            clients: _,
            // A split benchmark measures the configured servers only (the options refuse both).
            clusters: _,
        } = self;
        let mut out = ShardSettings::new();
        for (i, b) in backends.iter().enumerate() {
            backend(&mut out, i, b);
        }
        put(&mut out, "contenders", contenders);
        let BenchOptions {
            mode,
            keys,
            ops,
            duration,
            warmup,
            hold,
            ttl,
            wait,
            wait_mode,
            poll,
            renew,
            max_in_flight,
            // Which part of the run this shard is, and its own clock's start instant.
            stripe: _,
            start: _,
        } = bench;
        put(&mut out, "mode", mode);
        put(&mut out, "keys", keys);
        put(&mut out, "ops", ops);
        put(&mut out, "duration", duration);
        put(&mut out, "warmup", warmup);
        put(&mut out, "hold", hold);
        put(&mut out, "ttl", ttl);
        put(&mut out, "wait", wait);
        put(&mut out, "wait mode", wait_mode);
        put(&mut out, "poll", poll);
        put(&mut out, "renew", renew);
        put(&mut out, "max in flight", max_in_flight);
        out
    }
}

/// One backend's settings, passwords removed from its URLs.
fn backend(out: &mut ShardSettings, i: usize, b: &BackendConfig) {
    let BackendConfig {
        kind,
        urls,
        namespace,
        operation_timeout,
        connect_timeout,
        session_timeout,
        fencing,
        wait_replicas,
        fair,
        waiter_timeout,
        through_transaction_pooler: _,
        private_cluster,
        sentinel_master,
    } = b;
    let urls: Vec<String> = urls.iter().map(|u| Redacted(u).to_string()).collect();
    put(
        out,
        &format!("backend {}", i + 1),
        (
            kind.name(),
            urls,
            namespace,
            operation_timeout,
            connect_timeout,
            session_timeout,
            fencing,
            wait_replicas,
            fair,
            waiter_timeout,
            private_cluster,
            sentinel_master,
        ),
    );
}
