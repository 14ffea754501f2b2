//! What `lockbench run` (the main job) does, as typed values: the [`MainJobPlan`]. Each step is
//! a lockbench command with its settings; the steps that depend on what an earlier one measured
//! (the fault lab on the backends the benchmark reached, the live replays on the first measured
//! backend and on each job's decided one) are functions of those measurements. The binary only
//! runs the steps in order, with progress and signals; `--quick` is another plan, not other
//! strings, and a test holds what it will do without running anything.

use std::path::Path;
use std::time::Duration;

use lockbench_core::fault::{Persistence, PoolMode, Scenario, Variant};
use lockbench_core::{BackendId, BackendKind, Service};
use lockbench_decision::{Decision, ModelKind};

/// `simulate`: every spec's profiles at these volumes.
#[derive(Clone, Debug, PartialEq)]
pub struct SimulateStep {
    /// Volume multipliers.
    pub scales: Vec<f64>,
    /// Replays per (profile, scale).
    pub replays: u64,
}

/// `ttl`, once per spec.
#[derive(Clone, Debug, PartialEq)]
pub struct TtlStep {
    /// Replays per (profile, scale).
    pub replays: u64,
    /// `--max-lease-risk`, where the plan coarsens the lease bound; `None`: ttl's default.
    pub max_lease_risk: Option<f64>,
}

/// `bench`: every configured backend at these contention levels.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchStep {
    /// Contenders per level.
    pub contenders: Vec<usize>,
    /// Acquisitions timed per level (enough for the percentiles the record prints).
    pub ops: u64,
    /// Untimed warm-up per level.
    pub warmup: Duration,
}

/// `faults`: these variants, on every networked backend the benchmark reached.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultsStep {
    /// The lab's TTL.
    pub ttl: Duration,
    /// Trials per cell.
    pub trials: u32,
    /// Cells run at once (`faults --lanes`): the lab mostly waits on its servers.
    pub lanes: u16,
    /// The variants; empty for every one (the command's default).
    pub variants: Vec<Variant>,
}

/// `faults --client`: the lab again, through each client library a spec names
/// (`[decision] client`), with the faults step's TTL and trials.
#[derive(Clone, Debug, PartialEq)]
pub struct LibraryStep {
    /// The variants run through each library: a pause past the TTL (does the library tell its
    /// holder, and when) and one within the renewal's margin (does its renewal hold).
    pub variants: Vec<Variant>,
}

/// How a live replay holds the lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayMode {
    /// Today's TTL, scaled with the replayed volume.
    Ttl,
    /// A heartbeat lease, renewed.
    Heartbeat,
    /// Today's TTL, every write fenced.
    Fencing,
    /// Today's TTL, the API called with idempotency keys.
    IdempotencyKeys,
}

impl ReplayMode {
    /// Every defence, in the order the record lists them.
    pub const ALL: [ReplayMode; 4] = [
        ReplayMode::Ttl,
        ReplayMode::Heartbeat,
        ReplayMode::Fencing,
        ReplayMode::IdempotencyKeys,
    ];

    /// Its name in the results folder (`replay-billing-heartbeat`).
    pub fn name(self) -> &'static str {
        match self {
            ReplayMode::Ttl => "ttl",
            ReplayMode::Heartbeat => "heartbeat",
            ReplayMode::Fencing => "fencing",
            ReplayMode::IdempotencyKeys => "idempotency-keys",
        }
    }

    /// `replay`'s flags for it, with today's TTL scaled as `ttl`.
    fn flags(self, ttl: &str) -> Vec<String> {
        let with_ttl = |extra: &[&str]| {
            let mut f = vec!["--ttl".to_string(), ttl.to_string()];
            f.extend(extra.iter().map(|s| s.to_string()));
            f
        };
        match self {
            ReplayMode::Ttl => with_ttl(&[]),
            ReplayMode::Heartbeat => vec!["--heartbeat".to_string()],
            ReplayMode::Fencing => with_ttl(&["--fencing"]),
            ReplayMode::IdempotencyKeys => with_ttl(&["--idempotency-keys"]),
        }
    }
}

/// `replay`: each spec's incident, live, at a fraction of its volume and faster.
#[derive(Clone, Debug, PartialEq)]
pub struct ReplayStep {
    /// The replayed volume, as a multiple of today's (the TTL scales alike).
    pub scale: f64,
    /// Wall time per simulated second.
    pub time_scale: f64,
    /// Runs per replay.
    pub runs: u32,
    /// The defences replayed on the first measured backend.
    pub modes: Vec<ReplayMode>,
    /// Where the incident is replayed: the first of these the benchmark measured.
    pub preference: Vec<BackendKind>,
}

/// The main job: its steps, in order.
#[derive(Clone, Debug, PartialEq)]
pub struct MainJobPlan {
    /// `--quick`.
    pub quick: bool,
    /// The seed every step is given.
    pub seed: u64,
    /// Runtimes of every profile.
    pub simulate: SimulateStep,
    /// A TTL per spec.
    pub ttl: TtlStep,
    /// Acquisition latency.
    pub bench: BenchStep,
    /// The fault lab.
    pub faults: FaultsStep,
    /// The fault lab through the client libraries the specs name.
    pub libraries: LibraryStep,
    /// Live replays.
    pub replays: ReplayStep,
}

impl MainJobPlan {
    /// The plan of `run` (`quick`: `run --quick`).
    pub fn new(quick: bool, seed: u64) -> Self {
        let replays = if quick { 2_000 } else { 20_000 };
        MainJobPlan {
            quick,
            seed,
            simulate: SimulateStep {
                // Today's volume: the volume a TTL is sized for is each spec's own answer
                // (`target_volume`), which `ttl` reads.
                scales: vec![1.0],
                replays,
            },
            ttl: TtlStep {
                replays,
                // 6,000 replays of a pausing profile instead of 60,000: a coarser lease bound.
                max_lease_risk: quick.then_some(1e-3),
            },
            // Each level runs until it has timed enough acquisitions for the percentiles the
            // record prints (1,000 for a P99.9; bench stops a level at 60 s whatever it
            // reached): a level timed for one second gave etcd 153 acquisitions, whose "P99.9"
            // was its maximum.
            bench: if quick {
                BenchStep {
                    contenders: vec![1, 4],
                    ops: 1_000,
                    warmup: Duration::from_millis(200),
                }
            } else {
                BenchStep {
                    contenders: vec![1, 4, 16],
                    ops: 5_000,
                    warmup: Duration::from_secs(1),
                }
            },
            // Three trials a cell at least: a cell the decision cites shows "k of n trials", and
            // one trial cannot tell a rare overlap from none.
            faults: FaultsStep {
                ttl: Duration::from_secs(1),
                trials: 3,
                lanes: 3,
                variants: if quick { quick_variants() } else { Vec::new() },
            },
            libraries: LibraryStep {
                variants: vec![Variant::PauseNaive, Variant::PauseHeartbeatShort],
            },
            replays: ReplayStep {
                scale: 0.1,
                time_scale: 0.02,
                runs: if quick { 2 } else { 5 },
                modes: ReplayMode::ALL.to_vec(),
                preference: vec![
                    BackendKind::Redis,
                    BackendKind::PgSession,
                    BackendKind::Etcd,
                    BackendKind::Zookeeper,
                ],
            },
        }
    }

    /// The backends the fault lab runs on: every networked one the benchmark reached; `None`
    /// when Postgres, which holds the lab's protected resource, was not among them.
    pub fn fault_backends(&self, reached: &[BackendId]) -> Option<Vec<BackendId>> {
        let mut out: Vec<BackendId> = Vec::new();
        // A private cluster the benchmark started is gone; the lab starts its own.
        for b in reached.iter().filter(|b| !b.in_process() && !b.cluster) {
            if !out.contains(b) {
                out.push(*b);
            }
        }
        out.iter()
            .any(|b| b.kind.service() == Some(Service::Postgres))
            .then_some(out)
    }

    /// The backend the incident is replayed on: the first of the preference the benchmark
    /// measured, else the in-process one.
    pub fn replay_backend(&self, measured: &[BackendId]) -> BackendKind {
        self.replays
            .preference
            .iter()
            .copied()
            .find(|k| measured.contains(&BackendId::of(*k)))
            .unwrap_or(BackendKind::Memory)
    }

    /// The job's decided backend and how the replay holds it, when it is another measured,
    /// networked backend than `first`: a heartbeat lease renews, anything else takes today's TTL
    /// (a session or a transaction lock ignores it).
    pub fn decided_replay(
        &self,
        decided: &Decision,
        first: BackendKind,
        measured: &[BackendId],
    ) -> Option<(BackendKind, ReplayMode)> {
        let chosen = decided.backend?;
        if chosen == first
            || chosen == BackendKind::Memory
            || !measured.contains(&BackendId::of(chosen))
        {
            return None;
        }
        let mode = match decided.lock_model.kind {
            ModelKind::HeartbeatLease => ReplayMode::Heartbeat,
            ModelKind::FixedTtl | ModelKind::Session | ModelKind::Transaction => ReplayMode::Ttl,
        };
        Some((chosen, mode))
    }

    /// `simulate`'s arguments.
    pub fn simulate_args(&self, specs: &[&Path], out: &Path) -> Vec<String> {
        let mut args = vec!["simulate".to_string()];
        args.extend(specs.iter().map(|p| p.display().to_string()));
        for scale in &self.simulate.scales {
            args.extend(["--scale".to_string(), scale.to_string()]);
        }
        args.extend(strings(&[
            "--replays",
            &self.simulate.replays.to_string(),
            "--seed",
            &self.seed.to_string(),
            "--out",
            &out.display().to_string(),
        ]));
        args
    }

    /// `ttl`'s arguments for one spec (`current_ttl`: the TTL it names today).
    pub fn ttl_args(&self, spec: &Path, current_ttl: Option<Duration>, out: &Path) -> Vec<String> {
        let t = &self.ttl;
        let mut args = strings(&[
            "ttl",
            &spec.display().to_string(),
            "--replays",
            &t.replays.to_string(),
            "--seed",
            &self.seed.to_string(),
        ]);
        if let Some(risk) = t.max_lease_risk {
            args.extend(strings(&["--max-lease-risk", &format!("{risk:e}")]));
        }
        if let Some(ttl) = current_ttl {
            args.extend(strings(&[
                "--current-ttl",
                &format!("{}s", ttl.as_secs_f64()),
            ]));
        }
        args.extend(strings(&["--out", &out.display().to_string()]));
        args
    }

    /// `bench`'s arguments; with `consensus` (the config has etcd or ZooKeeper), each is
    /// measured on a private three-member cluster too, so that the record can say what a quorum
    /// costs.
    pub fn bench_args(&self, config: &Path, out: &Path, consensus: bool) -> Vec<String> {
        let b = &self.bench;
        let contenders: Vec<String> = b.contenders.iter().map(usize::to_string).collect();
        let mut args = strings(&[
            "bench",
            "--config",
            &config.display().to_string(),
            "--contenders",
            &contenders.join(","),
            "--ops",
            &b.ops.to_string(),
            "--warmup",
            &duration_arg(b.warmup),
        ]);
        if consensus {
            args.extend(strings(&["--topology", "cluster"]));
        }
        args.extend(strings(&["--out", &out.display().to_string()]));
        args
    }

    /// `faults` with the lab's TTL, seed and trials, and `extra` after the config.
    fn lab_args(&self, config: &Path, extra: &[&str]) -> Vec<String> {
        let f = &self.faults;
        let mut args = strings(&["faults", "--config", &config.display().to_string()]);
        args.extend(strings(extra));
        args.extend(strings(&[
            "--ttl",
            &duration_arg(f.ttl),
            "--seed",
            &self.seed.to_string(),
            "--trials",
            &f.trials.to_string(),
        ]));
        args
    }

    /// `faults`'s arguments on `backends`.
    pub fn faults_args(&self, config: &Path, backends: &[BackendId], out: &Path) -> Vec<String> {
        let f = &self.faults;
        let mut args = self.lab_args(config, &["--lanes", &f.lanes.to_string()]);
        for v in &f.variants {
            args.extend(["--scenario".to_string(), v.label()]);
        }
        for b in backends {
            args.extend(["--backend".to_string(), b.name().to_string()]);
        }
        args.extend(strings(&["--out", &out.display().to_string()]));
        args
    }

    /// `faults --client`'s arguments for `client`, on its backend.
    pub fn library_args(
        &self,
        config: &Path,
        client: lockbench_core::Client,
        out: &Path,
    ) -> Vec<String> {
        let mut args = self.lab_args(config, &["--client", client.name()]);
        for v in &self.libraries.variants {
            args.extend(["--scenario".to_string(), v.label()]);
        }
        args.extend(strings(&["--out", &out.display().to_string()]));
        args
    }

    /// `replay`'s arguments: `spec`'s incident (`profile`) on `backend` in `mode`, with today's
    /// TTL scaled with the volume.
    pub fn replay_args(
        &self,
        replay: Replay<'_>,
        backend: BackendKind,
        mode: ReplayMode,
        out: &Path,
    ) -> Vec<String> {
        let r = &self.replays;
        let ttl = format!("{}s", replay.current_ttl.mul_f64(r.scale).as_secs_f64());
        let mut args = strings(&[
            "replay",
            &replay.spec.display().to_string(),
            "--backend",
            backend.name(),
            "--config",
            &replay.config.display().to_string(),
            "--profile",
            replay.profile,
            "--scale",
            &r.scale.to_string(),
            "--time-scale",
            &r.time_scale.to_string(),
            "--runs",
            &r.runs.to_string(),
            "--seed",
            &self.seed.to_string(),
        ]);
        args.extend(mode.flags(&ttl));
        args.extend(strings(&["--out", &out.display().to_string()]));
        args
    }
}

/// What a live replay replays.
#[derive(Clone, Copy, Debug)]
pub struct Replay<'a> {
    /// The spec.
    pub spec: &'a Path,
    /// Its incident profile.
    pub profile: &'a str,
    /// The TTL it has today.
    pub current_ttl: Duration,
    /// The backend configuration.
    pub config: &'a Path,
}

/// `run --quick`'s fault cells: what the decision needs. Crash recovery on every backend (a
/// killed process and a vanished host), Postgres through PgBouncer in each mode, a cluster's
/// leader or primary lost (the record's failover sentences cite them), each scenario
/// with the variant that must overlap and the one that must not (a late release: a plain delete
/// and the client's own; a job longer than its lease: without and with a heartbeat; a grant that
/// arrives expired: trusted and checked).
fn quick_variants() -> Vec<Variant> {
    let mut variants = vec![
        Variant::PauseNaive,
        Variant::Restart(Persistence::None),
        Variant::Restart(Persistence::AofAlways),
        Variant::RedlockRestartAndClockJump,
        Variant::PoolLeak(PoolMode::NoReset),
        Variant::PartitionHeartbeat,
    ];
    variants.extend(Variant::ALL.iter().copied().filter(|v| {
        matches!(
            v.scenario(),
            Scenario::Crash
                | Scenario::Failover
                | Scenario::Outage
                | Scenario::Pooler
                | Scenario::Cluster
        )
    }));
    variants.extend([
        Variant::RedlockLateStart { checked: false },
        Variant::RedlockLateStart { checked: true },
        Variant::ReleaseAfterExpiry { checked: false },
        Variant::ReleaseAfterExpiry { checked: true },
        Variant::Overrun { heartbeat: false },
        Variant::Overrun { heartbeat: true },
        Variant::SlowReply { checked: false },
        Variant::SlowReply { checked: true },
    ]);
    variants
}

/// A duration as a flag takes it: `1s`, `200ms`.
fn duration_arg(d: Duration) -> String {
    if d.subsec_nanos() == 0 {
        format!("{}s", d.as_secs())
    } else {
        format!("{}ms", d.as_millis())
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(kinds: &[BackendKind]) -> Vec<BackendId> {
        kinds.iter().copied().map(BackendId::of).collect()
    }

    #[test]
    fn the_lab_needs_postgres_and_runs_on_every_networked_backend_reached() {
        let plan = MainJobPlan::new(true, 1);
        let reached = ids(&[
            BackendKind::Memory,
            BackendKind::Redis,
            BackendKind::PgSession,
            BackendKind::Redis,
        ]);
        assert_eq!(
            plan.fault_backends(&reached),
            Some(ids(&[BackendKind::Redis, BackendKind::PgSession]))
        );
        assert_eq!(plan.fault_backends(&ids(&[BackendKind::Redis])), None);
        // The benchmark's private clusters are its own: the lab is given the configured etcd.
        let mut with_cluster = ids(&[BackendKind::Etcd, BackendKind::PgSession]);
        with_cluster.extend(BackendId::cluster_of(BackendKind::Etcd));
        assert_eq!(
            plan.fault_backends(&with_cluster),
            Some(ids(&[BackendKind::Etcd, BackendKind::PgSession]))
        );
    }

    #[test]
    fn the_incident_is_replayed_on_the_first_preferred_backend_measured() {
        let plan = MainJobPlan::new(false, 1);
        assert_eq!(
            plan.replay_backend(&ids(&[BackendKind::Zookeeper, BackendKind::PgSession])),
            BackendKind::PgSession
        );
        assert_eq!(
            plan.replay_backend(&ids(&[BackendKind::Memory])),
            BackendKind::Memory
        );
        assert_eq!(plan.replays.runs, 5);
        assert_eq!(plan.bench.contenders, vec![1, 4, 16]);
        assert!(
            plan.faults.variants.is_empty(),
            "every variant in a full run"
        );
    }

    #[test]
    fn quick_runs_crash_failover_outage_and_clusters_whole_and_both_sides_of_the_rest() {
        let plan = MainJobPlan::new(true, 1);
        let v = &plan.faults.variants;
        for scenario in [
            Scenario::Crash,
            Scenario::Failover,
            Scenario::Outage,
            Scenario::Pooler,
            Scenario::Cluster,
        ] {
            let all = Variant::ALL.iter().filter(|x| x.scenario() == scenario);
            for x in all {
                assert!(v.contains(x), "{x}");
            }
        }
        assert!(v.contains(&Variant::RedlockLateStart { checked: true }));
        assert!(!v.contains(&Variant::ClockJump));
        let args = plan.faults_args(
            Path::new("lockbench.toml"),
            &ids(&[BackendKind::Redis]),
            Path::new("out"),
        );
        assert_eq!(
            args[..8],
            [
                "faults",
                "--config",
                "lockbench.toml",
                "--lanes",
                "3",
                "--ttl",
                "1s",
                "--seed"
            ]
        );
        assert!(
            args.windows(2)
                .any(|w| w == ["--scenario", "crash/host-vanished"])
        );
    }
}
