//! Turning flags into checked options: defaults and every cross-field rule live here, and each
//! error names the flag and what it expects.

use std::path::PathBuf;
use std::time::Duration;

use lockbench_analysis::DEFAULT_SAFETY_FACTOR;
use lockbench_workloads::{Frequency, MAX_REPLAYS};

use lockbench_bench::{BenchOptions, KeyMode, LoadMode, PollPolicy, WaitMode};
use lockbench_locks::BackendConfig;

use crate::cli::{BenchArgs, CheckArgs, SimulateArgs, SimulationArgs, TtlArgs};

mod calibrate;
mod faults;
mod parse;
mod replay;
pub mod shard;
mod shard_settings;
pub use calibrate::CalibrateSettings;
pub use faults::FaultsSettings;
pub use parse::{Refusal, resolve_seed};
use parse::{
    configured_backend, parse_number, parse_scale, positive_duration, read_config, whole_in,
};
pub use replay::ReplaySettings;

/// Most worker threads accepted; more would only add contention on 2-64 core machines.
const MAX_THREADS: usize = 1024;

/// Options shared by the commands that simulate.
#[derive(Clone, Debug)]
pub struct SimulationSettings {
    pub replays: u64,
    pub seed: u64,
    pub threads: usize,
    pub json: bool,
    pub out: Option<PathBuf>,
    /// This process's shard of a split run; `None` for the whole run.
    pub shard: Option<lockbench_core::ShardRecord>,
}

/// Options of `simulate`.
#[derive(Clone, Debug)]
pub struct SimulateSettings {
    pub specs: Vec<PathBuf>,
    pub scales: Vec<f64>,
    pub profiles: Vec<String>,
    pub simulation: SimulationSettings,
}

/// Options of `ttl`.
#[derive(Clone, Debug)]
pub struct TtlSettings {
    pub spec: PathBuf,
    pub profile: Option<String>,
    pub target_scale: f64,
    pub safety_factor: f64,
    pub current_ttl: Option<Duration>,
    /// `--runs-per-year`; `None` to take the spec's schedule.
    pub runs_per_year: Option<Frequency>,
    pub max_lease_risk: f64,
    pub observed: Option<PathBuf>,
    pub simulation: SimulationSettings,
}

impl SimulationSettings {
    fn resolve(args: &SimulationArgs) -> Result<Self, Refusal> {
        Self::resolve_in(args, &|name| std::env::var(name).ok())
    }

    /// [`Self::resolve`] with the shard defaults read from `env`.
    fn resolve_in(
        args: &SimulationArgs,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, Refusal> {
        let replays = whole_in("--replays", &args.replays, "replays", 1..=MAX_REPLAYS)?;
        let shard = shard::resolve(args.shard.as_deref(), args.run_id.as_deref(), env)?;
        if let Some(s) = &shard
            && args.seed.is_none()
        {
            return Err(Refusal::new(
                "--seed",
                format!(
                    "shard {}/{} of run {}: every shard must draw from the same seed, give --seed",
                    s.index, s.count, s.run_id
                ),
            ));
        }
        let seed = resolve_seed(args.seed.as_deref())?;
        let threads = match &args.threads {
            Some(text) => whole_in("--threads", text, "threads", 1..=MAX_THREADS)?,
            None => std::thread::available_parallelism().map_or(1, |n| n.get()),
        };
        Ok(SimulationSettings {
            replays,
            seed,
            threads,
            json: args.json,
            out: args.out.clone(),
            shard,
        })
    }

    /// [`Self::resolve`] for a command that runs whole: `--shard` is refused, and the Kubernetes
    /// and Slurm variables that make other commands shards are not read.
    pub fn resolve_whole(args: &SimulationArgs, command: &str) -> Result<Self, Refusal> {
        let options = Self::resolve_in(args, &|_| None)?;
        if let Some(s) = &options.shard {
            return Err(Refusal::new(
                "--shard",
                format!(
                    "{command} runs whole: shard {}/{} cannot be merged; run it without --shard",
                    s.index, s.count
                ),
            ));
        }
        Ok(options)
    }

    /// The replays this process runs.
    pub fn engine_shard(&self) -> lockbench_workloads::Shard {
        self.shard
            .as_ref()
            .map_or(lockbench_workloads::Shard::WHOLE, |s| {
                lockbench_workloads::Shard {
                    index: s.index,
                    count: s.count,
                }
            })
    }
}

impl SimulateSettings {
    /// Checks `simulate`'s flags.
    pub fn resolve(args: &SimulateArgs) -> Result<Self, Refusal> {
        let mut scales = args
            .scales
            .iter()
            .map(|s| parse_scale("--scale", s))
            .collect::<Result<Vec<_>, _>>()?;
        if scales.is_empty() {
            scales.push(1.0);
        }
        let mut options = SimulateSettings {
            specs: args.specs.clone(),
            scales,
            profiles: args.profiles.clone(),
            simulation: SimulationSettings::resolve(&args.simulation)?,
        };
        let settings = options.shard_settings();
        if let Some(shard) = &mut options.simulation.shard {
            shard.settings = settings;
        }
        Ok(options)
    }
}

impl TtlSettings {
    /// Checks `ttl`'s flags.
    pub fn resolve(args: &TtlArgs) -> Result<Self, Refusal> {
        let safety_factor: f64 =
            parse_number("--safety-factor", &args.safety_factor, "a factor such as 3")?;
        if !(safety_factor.is_finite() && (1.0..=100.0).contains(&safety_factor)) {
            return Err(Refusal::new(
                "--safety-factor",
                format!(
                    "expected a factor from 1 to 100 (default {DEFAULT_SAFETY_FACTOR}), got {safety_factor}"
                ),
            ));
        }
        let current_ttl = match &args.current_ttl {
            Some(text) => {
                let d = lockbench_workloads::duration::parse(text)
                    .map_err(|m| Refusal::new("--current-ttl", m))?;
                if d.is_zero() {
                    return Err(Refusal::new("--current-ttl", "expected a TTL above zero"));
                }
                Some(d)
            }
            None => None,
        };
        let runs_per_year = match &args.runs_per_year {
            Some(text) => {
                let n: f64 = parse_number("--runs-per-year", text, "a number of runs such as 12")?;
                Some(Frequency::of_flag(n).map_err(|m| Refusal::new("--runs-per-year", m))?)
            }
            None => None,
        };
        let max_lease_risk: f64 = parse_number(
            "--max-lease-risk",
            &args.max_lease_risk,
            "a chance per run such as 1e-4",
        )?;
        // Below 1e-7 the replays the bound needs (about 6 / P) pass MAX_REPLAYS.
        if !(max_lease_risk.is_finite() && (1e-7..=0.5).contains(&max_lease_risk)) {
            return Err(Refusal::new(
                "--max-lease-risk",
                format!("expected a chance per run from 1e-7 to 0.5, got {max_lease_risk}"),
            ));
        }
        let simulation = SimulationSettings::resolve(&args.simulation)?;
        if args.observed.is_some() && simulation.shard.is_some() {
            return Err(Refusal::new(
                "--observed",
                "a sharded ttl cannot check the model: run `lockbench check` on its own",
            ));
        }
        let mut options = TtlSettings {
            spec: args.spec.clone(),
            profile: args.profile.clone(),
            target_scale: parse_scale("--target-scale", &args.target_scale)?,
            safety_factor,
            current_ttl,
            runs_per_year,
            max_lease_risk,
            observed: args.observed.clone(),
            simulation,
        };
        let settings = options.shard_settings();
        if let Some(shard) = &mut options.simulation.shard {
            shard.settings = settings;
        }
        Ok(options)
    }
}

/// Options of `bench`.
#[derive(Clone, Debug)]
pub struct BenchSettings {
    pub backends: Vec<BackendConfig>,
    pub contenders: Vec<usize>,
    pub bench: BenchOptions,
    pub json: bool,
    pub out: Option<PathBuf>,
    pub config_path: PathBuf,
    /// This process's shard of a benchmark split over several; `None` for a whole run.
    pub shard: Option<lockbench_core::ShardRecord>,
    /// When the measured part starts (`--start-at`).
    pub start_at: Option<std::time::SystemTime>,
}

/// Most contenders in one run: each holds a connection or session of its own.
const MAX_CONTENDERS: usize = 256;

impl BenchSettings {
    /// Checks `bench`'s flags and reads the config file.
    pub fn resolve(args: &BenchArgs) -> Result<Self, Refusal> {
        let (_, configs) = read_config(&args.config)?;
        let backends = if args.backends.is_empty() {
            configs
        } else {
            args.backends
                .iter()
                .map(|name| configured_backend(&configs, name, &args.config))
                .collect::<Result<Vec<_>, _>>()?
        };
        let contenders = args
            .contenders
            .split(',')
            .map(|part| {
                let n: usize = parse_number(
                    "--contenders",
                    part,
                    "comma-separated whole numbers such as 1,4,16",
                )?;
                if (1..=MAX_CONTENDERS).contains(&n) {
                    Ok(n)
                } else {
                    Err(Refusal::new(
                        "--contenders",
                        format!("expected 1 to {MAX_CONTENDERS} contenders, got {n}"),
                    ))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let ops = match &args.ops {
            Some(text) => {
                let n: u64 = parse_number("--ops", text, "a whole number of acquisitions")?;
                if n == 0 {
                    return Err(Refusal::new("--ops", "expected at least 1"));
                }
                Some(n)
            }
            None => None,
        };
        let duration = match (&args.duration, ops) {
            (Some(_), Some(_)) => {
                return Err(Refusal::new(
                    "--ops",
                    "--ops and --duration are two ways to end a run: give --ops N (each run stops after N acquisitions, within 60 s) or --duration D (each run measures for D), not both",
                ));
            }
            (Some(text), None) => positive_duration("--duration", text)?,
            (None, Some(_)) => Duration::from_secs(60),
            (None, None) => Duration::from_secs(5),
        };
        if duration > Duration::from_secs(3600) {
            return Err(Refusal::new("--duration", "expected at most 1h per run"));
        }
        let mode = match &args.rate {
            Some(text) => {
                let rate: f64 = parse_number("--rate", text, "arrivals per second such as 1000")?;
                if !(rate.is_finite() && rate > 0.0 && rate <= 1_000_000.0) {
                    return Err(Refusal::new(
                        "--rate",
                        format!("expected 0 < rate <= 1000000 per second, got {text}"),
                    ));
                }
                LoadMode::Open { rate_per_s: rate }
            }
            None => LoadMode::Closed,
        };
        let keys = match args.keys.as_str() {
            "one" => KeyMode::One,
            "many" => KeyMode::Many,
            other => {
                return Err(Refusal::new(
                    "--keys",
                    format!("expected \"one\" or \"many\", got \"{other}\""),
                ));
            }
        };
        let parse = |flag: &str, text: &str| {
            lockbench_workloads::duration::parse(text).map_err(|m| Refusal::new(flag, m))
        };
        let bench = BenchOptions {
            mode,
            keys,
            ops,
            duration,
            warmup: parse("--warmup", &args.warmup)?,
            hold: parse("--hold", &args.hold)?,
            ttl: positive_duration("--ttl", &args.ttl)?,
            wait: positive_duration("--wait", &args.wait)?,
            wait_mode: match args.wait_mode.as_str() {
                "native" => WaitMode::Native,
                "poll" => WaitMode::Poll,
                other => {
                    return Err(Refusal::new(
                        "--wait-mode",
                        format!("expected \"native\" or \"poll\", got \"{other}\""),
                    ));
                }
            },
            poll: poll_policy(&args.poll)?,
            renew: !args.no_renew,
            max_in_flight: 1024,
            ..BenchOptions::default()
        };
        let (shard, start_at) = shard::bench(args, ops.is_some(), backends.len())?;
        if bench.warmup > Duration::from_secs(3600) {
            return Err(Refusal::new("--warmup", "expected at most 1h"));
        }
        if let (Some(s), LoadMode::Open { .. }) = (&shard, mode)
            && let Some(&few) = contenders.iter().find(|&&c| (c as u64) < s.count)
        {
            return Err(Refusal::new(
                "--contenders",
                format!(
                    "an open loop over {} shards needs a client in every shard: {few} clients leave some shards' arrivals unsent; give at least {}",
                    s.count, s.count
                ),
            ));
        }
        let mut command = BenchSettings {
            backends,
            contenders,
            bench,
            json: args.json,
            out: args.out.clone(),
            config_path: args.config.clone(),
            shard,
            start_at,
        };
        let settings = command.shard_settings();
        if let Some(shard) = &mut command.shard {
            shard.settings = settings;
        }
        Ok(command)
    }
}

/// `--poll MIN..MAX`: two durations, MIN above zero and at most MAX, MAX at most 1 s.
fn poll_policy(text: &str) -> Result<PollPolicy, Refusal> {
    let Some((first, max)) = text.split_once("..") else {
        return Err(Refusal::new(
            "--poll",
            format!("expected MIN..MAX such as 1ms..20ms, got \"{text}\""),
        ));
    };
    let (first, max) = (
        positive_duration("--poll", first)?,
        positive_duration("--poll", max)?,
    );
    if first > max || max > Duration::from_secs(1) {
        return Err(Refusal::new(
            "--poll",
            format!("expected MIN <= MAX <= 1s, got \"{text}\""),
        ));
    }
    Ok(PollPolicy { first, max })
}

/// `check`'s flags, checked: the spec, the past runs and how to read them, the simulation.
#[derive(Clone, Debug)]
pub struct CheckSettings {
    pub spec: lockbench_workloads::WorkloadSpec,
    /// The profile of runs that name none: `--profile`, else the spec's first.
    pub default_profile: String,
    pub observed: PathBuf,
    pub columns: lockbench_workloads::observed::RunColumns,
    pub simulation: SimulationSettings,
}

impl CheckSettings {
    /// Checks the flags and reads the spec before anything is simulated.
    pub fn resolve(args: &CheckArgs) -> Result<Self, anyhow::Error> {
        let simulation = SimulationSettings::resolve_whole(&args.simulation, "check")?;
        let spec = lockbench_workloads::WorkloadSpec::load(&args.spec)?;
        let default_profile = spec.profile_or_first(args.profile.as_deref())?.name.clone();
        Ok(CheckSettings {
            spec,
            default_profile,
            observed: args.observed.clone(),
            columns: args.runs.columns(),
            simulation,
        })
    }
}

/// `run`'s flags, checked: where the results tree goes, the config, every spec of `--specs`
/// read, the seed.
#[derive(Clone, Debug)]
pub struct MainJobSettings {
    pub out: PathBuf,
    pub config: PathBuf,
    pub specs: Vec<lockbench_workloads::WorkloadSpec>,
    pub seed: u64,
    pub quick: bool,
}

impl MainJobSettings {
    /// Checks the flags and reads the specs; `--out` defaults to `results/run-` and `stamp()`.
    pub fn resolve(
        args: &crate::cli::MainJobArgs,
        stamp: impl FnOnce() -> String,
    ) -> Result<Self, anyhow::Error> {
        let out = args
            .out
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("results/run-{}", stamp())));
        if !args.config.is_file() {
            return Err(Refusal::new(
                "--config",
                format!(
                    "{}: no such file; the default lockbench.toml sits at the repository root",
                    args.config.display()
                ),
            )
            .into());
        }
        let mut paths: Vec<PathBuf> = std::fs::read_dir(&args.specs)
            .map_err(|e| Refusal::new("--specs", format!("{}: {e}", args.specs.display())))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        paths.sort();
        if paths.is_empty() {
            return Err(Refusal::new(
                "--specs",
                format!("{}: no .toml workload specs in it", args.specs.display()),
            )
            .into());
        }
        let specs = paths
            .iter()
            .map(|p| lockbench_workloads::WorkloadSpec::load(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MainJobSettings {
            out,
            config: args.config.clone(),
            specs,
            seed: resolve_seed(args.seed.as_deref())?,
            quick: args.quick,
        })
    }
}
