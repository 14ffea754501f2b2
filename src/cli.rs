//! Command-line flags, as clap sees them. Values stay strings or plain numbers here; `options`
//! turns them into checked options with defaults, so that errors can name the flag.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// lockbench: measure how long a distributed-lock TTL must be.
#[derive(Debug, Parser)]
#[command(name = "lockbench", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Replay workloads in simulated time: runtime percentiles per profile and scale.
    Simulate(SimulateArgs),
    /// Recommend a lock TTL and a heartbeat lease, and price the TTL in use today.
    ///
    /// The TTL is sized at the spec's target_volume (its growth answer) as the measured P99.9
    /// runtime x a safety factor, kept apart; the lease from the profile whose pauses threaten it
    /// most; today's TTL (the spec's current_ttl) is priced per run and per year.
    Ttl(TtlArgs),
    /// Check workload specs without running them.
    Validate(ValidateArgs),
    /// Decide each job's backend, lock model, mechanisms and actions.
    ///
    /// From the spec's [decision] answers and what the results measured: every other backend's
    /// verdict with the fact that decides it, the mechanisms, the acquisition-failure policy, the
    /// residual risk, the actions with their owners and how to verify them, and (for a decision
    /// blocked on a risk not acceptable yet) the decision after them.
    Decide(DecideArgs),
    /// Check a spec against past job runs.
    ///
    /// Where each run falls in the simulated distribution at its volume, a KS test of those
    /// positions, and the runs beyond the simulated P99 and P99.9.
    Check(CheckArgs),
    /// Fit each step's latency to observed per-call durations and write a spec.
    ///
    /// Reads CSV or OpenTelemetry OTLP JSON, and writes a spec that carries the fitted latencies,
    /// with the fit shown.
    Calibrate(CalibrateArgs),
    /// Measure acquire, renew, release and handoff latency of each lock backend.
    Bench(BenchArgs),
    /// Run a workload for real and count double executions.
    ///
    /// Against Postgres, a payment-API stub and a lock backend, with racing workers.
    Replay(ReplayArgs),
    /// Write the locking decision record and its alerting rules from results directories.
    ///
    /// Markdown, HTML with charts, and prometheus-rules.yml with its promtool tests.
    Report(ReportArgs),
    /// Show what changed between two sets of results (staging before and after a change).
    Compare(CompareArgs),
    /// The main job: simulate, size TTLs, bench, the fault lab, live replays, the record.
    ///
    /// Simulates every spec and derives its TTL (pricing its current_ttl), benchmarks every
    /// reachable backend, runs a short fault matrix on them, replays each spec's incident_profile
    /// live when Postgres is reachable, and writes the record and its alerting rules.
    Run(MainJobArgs),
    /// Inject faults into servers lockbench starts and measure overlaps and stale writes.
    ///
    /// Pauses, restarts, clock jumps, pool leaks, partitions, crashes, failovers, outages, late
    /// releases, slow replies and slow jobs, into processes, servers and namespaces lockbench
    /// starts itself; measures overlaps, stale writes and what fencing did.
    Faults(FaultsArgs),
    /// List the real lock client libraries, or check an adapter against a real server.
    ///
    /// The libraries lockbench drives through adapters (redis-py, python-redis-lock,
    /// redis-semaphore, pottery, node-redlock, kazoo, curator, etcd-go, tooz), with their versions
    /// and whether each is installed; `check` holds an adapter to the adapter protocol
    /// (docs/CLIENTS.md).
    Clients(ClientsArgs),
    /// Merge the shards of a split simulate, ttl or bench run into one results directory.
    ///
    /// The directory the whole run would have written: histograms added exactly, the TTL
    /// derived from the merged whole.
    Merge(MergeArgs),
    /// Print a shell's completion script (bash, zsh, fish, elvish, powershell).
    Completions(CompletionsArgs),
    /// Write man pages for lockbench and each command.
    Man(ManArgs),
    /// One worker of a fault-lab trial (started by `faults`; reads its plan on stdin).
    #[command(hide = true)]
    FaultWorker(FaultWorkerArgs),
}

/// `lockbench completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

/// `lockbench man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Where the pages go (made if missing; existing pages of lockbench are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// Flags shared by the commands that simulate.
#[derive(Debug, Args)]
pub struct SimulationArgs {
    /// Replays per (profile, scale); P99.9 needs at least 10,000.
    #[arg(
        long,
        value_name = "N",
        default_value = "20000",
        value_parser = crate::values::replays,
        allow_hyphen_values = true
    )]
    pub replays: u64,
    /// Seed of every random stream (random when omitted; always printed and stored).
    #[arg(long, value_name = "SEED", value_parser = crate::values::seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
    /// Worker threads (default: every core). Results do not depend on it.
    #[arg(long, value_name = "N", value_parser = crate::values::threads, allow_hyphen_values = true)]
    pub threads: Option<usize>,
    /// Print machine-readable JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write a results directory (manifest, histograms, CSV); it must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run shard I of N: the replays whose index is I mod N (with --seed and --run-id; merge the
    /// shards' directories with `lockbench merge`). Default: JOB_COMPLETION_INDEX with
    /// LOCKBENCH_SHARDS (a Kubernetes Indexed Job), or SLURM_ARRAY_TASK_ID with
    /// SLURM_ARRAY_TASK_COUNT (a Slurm job array).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The run id every shard of a split run carries (default LOCKBENCH_RUN_ID).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// How replays draw their calls: `blocks` draws the calls between two events (an episode
    /// starting or ending, a pause) as one sum per step, `exact` draws every call (the reference,
    /// slower as volume grows).
    #[arg(long, value_enum, default_value_t = EngineArg::Blocks)]
    pub engine: EngineArg,
}

/// `--engine`: which simulator engine replays the models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EngineArg {
    /// Calls between events as one sum per step; call by call around events.
    Blocks,
    /// Every call drawn.
    Exact,
}

impl From<EngineArg> for lockbench_workloads::Engine {
    fn from(arg: EngineArg) -> Self {
        match arg {
            EngineArg::Blocks => lockbench_workloads::Engine::Blocks,
            EngineArg::Exact => lockbench_workloads::Engine::Exact,
        }
    }
}

/// `lockbench simulate`.
#[derive(Debug, Args)]
pub struct SimulateArgs {
    /// Workload spec files (TOML).
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    /// Volume multiplier; repeat for several (default 1).
    #[arg(long = "scale", value_name = "X", value_parser = crate::values::scale, allow_hyphen_values = true)]
    pub scales: Vec<f64>,
    /// Profile to simulate; repeat for several (default: every profile of each spec).
    #[arg(long = "profile", value_name = "NAME")]
    pub profiles: Vec<String>,
    #[command(flatten)]
    pub simulation: SimulationArgs,
}

/// `lockbench ttl`.
#[derive(Debug, Args)]
pub struct TtlArgs {
    /// Workload spec file (TOML).
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Profile to derive the TTL from (default: every profile; the one with the highest P99.9
    /// wins, so the default is never the optimistic case).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Volume multiplier the TTL must hold at (1 = the spec's own volume) [default: the spec's
    /// `target_volume` over its `volume`; 1, recorded as assumed, when it has none].
    #[arg(
        long,
        value_name = "X",
        value_parser = crate::values::scale,
        allow_hyphen_values = true
    )]
    pub target_scale: Option<f64>,
    /// TTL = measured P99.9 x this factor.
    #[arg(
        long,
        value_name = "F",
        default_value = "3",
        value_parser = crate::values::safety_factor,
        allow_hyphen_values = true
    )]
    pub safety_factor: f64,
    /// The TTL in use today, to price: chance per run of outliving it (e.g. 300s, 5m) [default:
    /// the spec's `current_ttl`].
    #[arg(long, value_name = "DURATION", value_parser = crate::values::current_ttl, allow_hyphen_values = true)]
    pub current_ttl: Option<std::time::Duration>,
    /// Job runs per year, for the yearly double-execution estimate [default: the spec's
    /// `schedule` or `runs_per_year`; 12 (monthly, recorded as assumed) when it has neither].
    #[arg(long, value_name = "N", value_parser = crate::values::runs_per_year, allow_hyphen_values = true)]
    pub runs_per_year: Option<lockbench_workloads::Frequency>,
    /// The chance per run of losing the heartbeat lease to a stall that the lease must stay below
    /// (95 % upper bound): ttl picks the shortest whole-second lease that does. A profile with
    /// pauses runs at least about 6 / P replays (60,000 at the default) so that the bound can.
    #[arg(
        long,
        value_name = "P",
        default_value = "1e-4",
        value_parser = crate::values::lease_risk,
        allow_hyphen_values = true
    )]
    pub max_lease_risk: f64,
    /// Double executions a year the job's owners accept [default: the spec's
    /// `accepted_double_runs_per_year`, else 0.01, one in a century]: the TTL is also sized so
    /// that runs outlive it less often than that at the job's schedule.
    #[arg(long, value_name = "N", value_parser = crate::values::budget, allow_hyphen_values = true)]
    pub accepted_double_runs_per_year: Option<f64>,
    /// Past job runs (CSV, as `lockbench check --observed` reads them): the model is checked
    /// against them first, and a rejected model is said so in the first line.
    #[arg(long, value_name = "RUNS.csv")]
    pub observed: Option<PathBuf>,
    #[command(flatten)]
    pub runs: RunColumnArgs,
    #[command(flatten)]
    pub simulation: SimulationArgs,
}

/// `lockbench calibrate`.
#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Observed per-call durations: CSV files (a step column and a duration column, see
    /// --step-column, --duration-column, --ms-column) or OpenTelemetry trace exports (OTLP JSON,
    /// one request or one per line: span name = step, end - start = duration).
    #[arg(value_name = "FILE", required = true)]
    pub inputs: Vec<PathBuf>,
    /// The spec to write (TOML); it must not exist. An `empirical` step's samples are written
    /// beside it, as OUT_STEM.STEP.us.
    #[arg(long, value_name = "SPEC")]
    pub out: PathBuf,
    /// The spec being calibrated: its workload and step targets are kept, every CSV row must
    /// name one of its steps, and trace spans named otherwise are skipped.
    #[arg(long, value_name = "SPEC")]
    pub spec: Option<PathBuf>,
    /// Calibrate only this step (repeatable); it must be observed.
    #[arg(long = "step", value_name = "NAME")]
    pub steps: Vec<String>,
    /// Read span or row name FROM as step TO (repeatable).
    #[arg(long = "rename", value_name = "FROM=TO")]
    pub renames: Vec<String>,
    /// CSV column naming the step.
    #[arg(long, value_name = "NAME", default_value = "step")]
    pub step_column: String,
    /// CSV column of durations with units (110ms, 4.2s).
    #[arg(long, value_name = "NAME", default_value = "duration")]
    pub duration_column: String,
    /// CSV column of durations in milliseconds (bare numbers), instead of --duration-column.
    #[arg(long, value_name = "NAME")]
    pub ms_column: Option<String>,
    /// Print the fits as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `lockbench check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Workload spec file (TOML).
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Past job runs (CSV): a duration and a volume per row, optionally the profile the run is
    /// believed to be.
    #[arg(long, value_name = "RUNS.csv")]
    pub observed: PathBuf,
    /// Profile of the runs that name none (default: the spec's first profile).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    #[command(flatten)]
    pub runs: RunColumnArgs,
    #[command(flatten)]
    pub simulation: SimulationArgs,
}

/// How a CSV of past job runs names its columns.
#[derive(Debug, Args)]
pub struct RunColumnArgs {
    /// Column of run durations with units (423s, 7m3s).
    #[arg(
        long = "duration-column",
        value_name = "NAME",
        default_value = "duration"
    )]
    pub run_duration_column: String,
    /// Column of run durations in milliseconds, instead of --duration-column.
    #[arg(long = "ms-column", value_name = "NAME")]
    pub run_ms_column: Option<String>,
    /// Column of each run's volume (customers, rows).
    #[arg(long, value_name = "NAME", default_value = "volume")]
    pub volume_column: String,
    /// Column of the profile a run is believed to be, when the file has one.
    #[arg(long, value_name = "NAME", default_value = "profile")]
    pub profile_column: String,
}

impl RunColumnArgs {
    /// The columns as the reader takes them.
    pub fn columns(&self) -> lockbench_workloads::observed::RunColumns {
        lockbench_workloads::observed::RunColumns {
            duration: self.run_duration_column.clone(),
            ms: self.run_ms_column.clone(),
            volume: self.volume_column.clone(),
            profile: self.profile_column.clone(),
        }
    }
}

/// `lockbench clients`.
#[derive(Debug, Args)]
pub struct ClientsArgs {
    /// What to do (default: list the adapters).
    #[command(subcommand)]
    pub action: Option<ClientsAction>,
}

/// `lockbench clients ...`.
#[derive(Debug, Subcommand)]
pub enum ClientsAction {
    /// Run adapters through the protocol's checks against the real server of their backend:
    /// two instances contend for one key; every reply's answer and timestamp is checked.
    Check(ClientsCheckArgs),
}

/// `lockbench clients check`.
#[derive(Debug, Args)]
pub struct ClientsCheckArgs {
    /// Adapters: a shipped adapter's name (`lockbench clients` lists them) or the path of an
    /// adapter program.
    #[arg(required = true, value_name = "ADAPTER")]
    pub adapters: Vec<String>,
    /// Backend configuration (server URLs, namespace, timeouts).
    #[arg(long, value_name = "FILE", default_value = "lockbench.toml")]
    pub config: PathBuf,
    /// The backend a user's own adapter locks on (a shipped adapter's backend is known).
    #[arg(long, value_name = "NAME")]
    pub backend: Option<String>,
}

/// `lockbench validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// Workload spec files (TOML).
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
}

/// `lockbench bench`.
#[derive(Debug, Args)]
pub struct BenchArgs {
    /// Backend configuration (server URLs, namespace, timeouts).
    #[arg(long, value_name = "FILE", default_value = "lockbench.toml")]
    pub config: PathBuf,
    /// Backend to measure; repeat for several (default: every backend in the config).
    #[arg(long = "backend", value_name = "NAME")]
    pub backends: Vec<String>,
    /// Also measure through this client library's adapter (`lockbench clients` lists them, or
    /// the path of your own adapter, with the one --backend it locks on), beside lockbench's own
    /// client on the same server; repeat for several. Without --backend, only the libraries'
    /// backends are measured.
    #[arg(long = "client", value_name = "NAME")]
    pub clients: Vec<String>,
    /// Contention levels, comma-separated: contenders on the key (closed loop) or clients that
    /// arrivals take in turn (open loop).
    #[arg(
        long,
        value_name = "N,N,...",
        value_delimiter = ',',
        default_value = "1,4,16",
        value_parser = crate::values::contenders,
        allow_hyphen_values = true
    )]
    pub contenders: Vec<usize>,
    /// Stop each run after this many measured acquisitions (within 60 s); not with --duration.
    #[arg(long, value_name = "N", value_parser = crate::values::ops, allow_hyphen_values = true)]
    pub ops: Option<u64>,
    /// Measure each run this long (default 5s); not with --ops.
    #[arg(long, value_name = "DURATION", value_parser = crate::values::positive_duration, allow_hyphen_values = true)]
    pub duration: Option<std::time::Duration>,
    /// Warm-up before each run, excluded from the figures.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "1s",
        value_parser = crate::values::duration,
        allow_hyphen_values = true
    )]
    pub warmup: std::time::Duration,
    /// Open loop: arrivals per second, latency from each arrival's intended start.
    #[arg(long, value_name = "PER_SECOND", value_parser = crate::values::rate, allow_hyphen_values = true)]
    pub rate: Option<f64>,
    /// "one": every contender on one key; "many": a key each (no contention).
    #[arg(long, value_enum, value_name = "one|many", default_value_t = KeysArg::One)]
    pub keys: KeysArg,
    /// How long each holder keeps the lock before releasing.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "0s",
        value_parser = crate::values::duration,
        allow_hyphen_values = true
    )]
    pub hold: std::time::Duration,
    /// TTL of every lease.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "30s",
        value_parser = crate::values::positive_duration,
        allow_hyphen_values = true
    )]
    pub ttl: std::time::Duration,
    /// Give up one acquisition after this long.
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5s",
        value_parser = crate::values::positive_duration,
        allow_hyphen_values = true
    )]
    pub wait: std::time::Duration,
    /// How a contender waits for a held lock: `native` (the backend's own queue where it has one:
    /// a blocking advisory lock for pg-session and pg-xact; the others poll) or `poll`.
    #[arg(long, value_enum, value_name = "MODE", default_value_t = WaitModeArg::Native)]
    pub wait_mode: WaitModeArg,
    /// Backoff of a polling contender: first pause..longest pause, doubled after each refused
    /// try and jittered.
    #[arg(long, value_name = "MIN..MAX", default_value = "500us..20ms")]
    pub poll: String,
    /// Do not renew while holding.
    #[arg(long)]
    pub no_renew: bool,
    /// `single`: the configured servers. `cluster`: also, right after each configured etcd and
    /// ZooKeeper, a private cluster of three members lockbench starts on loopback and stops after
    /// (`etcd-cluster`, `zookeeper-cluster` in the results): what a quorum costs, in one run.
    #[arg(long, value_enum, value_name = "single|cluster", default_value_t = TopologyArg::Single)]
    pub topology: TopologyArg,
    /// Print machine-readable JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write a results directory (manifest, CSV, histograms); it must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run shard I of N of a benchmark split over several machines: the contenders whose
    /// run-wide ids are I, I+N, ... on the same keys (an open loop: every Nth arrival of one
    /// schedule). Needs --run-id and --start-at; default from JOB_COMPLETION_INDEX with
    /// LOCKBENCH_SHARDS, or the Slurm array variables.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// The run id every shard carries (default LOCKBENCH_RUN_ID).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    /// When every shard starts measuring, after its warm-up (RFC 3339, e.g.
    /// 2026-12-01T15:00:00Z); a shard not ready by then exits with code 4. Contention level j
    /// starts j x (warm-up + duration + wait + hold + 1 s) later.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
}

/// `lockbench replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Workload spec file (TOML).
    #[arg(value_name = "SPEC")]
    pub spec: PathBuf,
    /// Lock backend the workers race for.
    #[arg(long, value_name = "NAME")]
    pub backend: String,
    /// Backend configuration; `[replay] database` (else the pg-session URL) holds the job's
    /// tables.
    #[arg(long, value_name = "FILE", default_value = "lockbench.toml")]
    pub config: PathBuf,
    /// Profile to replay (default: baseline, or the spec's first profile).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Volume multiplier.
    #[arg(
        long,
        value_name = "X",
        default_value = "1",
        value_parser = crate::values::scale,
        allow_hyphen_values = true
    )]
    pub scale: f64,
    /// Multiplier on every injected latency, episode, pause and TTL: at 0.05 a 300 s TTL lasts
    /// 15 s. Results are shown in real-equivalent seconds.
    #[arg(
        long,
        value_name = "F",
        default_value = "0.05",
        value_parser = crate::values::time_scale,
        allow_hyphen_values = true
    )]
    pub time_scale: f64,
    /// Workers: the first runs the job, the others keep trying the lock, as a retry worker does.
    #[arg(
        long,
        value_name = "W",
        default_value = "2",
        value_parser = crate::values::workers,
        allow_hyphen_values = true
    )]
    pub workers: usize,
    /// Job runs.
    #[arg(
        long,
        value_name = "N",
        default_value = "5",
        value_parser = crate::values::runs,
        allow_hyphen_values = true
    )]
    pub runs: u32,
    /// Seed: run i gets the episodes the simulator draws for replay i (random when omitted).
    #[arg(long, value_name = "SEED", value_parser = crate::values::seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
    /// Hold the lock with this fixed TTL (real-equivalent), never renewed.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = crate::values::positive_duration,
        allow_hyphen_values = true,
        conflicts_with = "heartbeat"
    )]
    pub ttl: Option<std::time::Duration>,
    /// Hold a short lease renewed on a heartbeat, sized as `lockbench ttl` recommends (the
    /// default when --ttl is not given).
    #[arg(long)]
    pub heartbeat: bool,
    /// Writes carry the fencing token; Postgres refuses a stale one and the stale worker stops.
    #[arg(long)]
    pub fencing: bool,
    /// Charges carry an idempotency key (period and customer); the stub refuses a second charge.
    #[arg(long)]
    pub idempotency_keys: bool,
    /// Simulated replays to compare the live runtimes with (0: no comparison).
    #[arg(
        long,
        value_name = "N",
        default_value = "20000",
        value_parser = crate::values::compare_replays,
        allow_hyphen_values = true
    )]
    pub compare_replays: u64,
    /// Print machine-readable JSON instead of a summary.
    #[arg(long)]
    pub json: bool,
    /// Also write a results directory; it must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `lockbench decide`.
#[derive(Debug, Args)]
pub struct DecideArgs {
    /// Workload specs whose [decision] answers to decide on.
    #[arg(required = true, value_name = "SPEC")]
    pub specs: Vec<PathBuf>,
    /// Results to cite (a results directory, or a folder of them as `run` writes); repeat for
    /// several. Without it the decision follows from how each backend locks, and says so.
    #[arg(long = "results", value_name = "DIR")]
    pub results: Vec<PathBuf>,
    /// Decide as if an action of the record were done: `guard:STEP` (the step has a guard of its
    /// own) or `client:NAME` (the job locks with that library); repeat for several. The record's
    /// actions table names the ones that apply.
    #[arg(long = "assume", value_name = "ACTION", value_parser = lockbench_decision::Assumption::parse)]
    pub assume: Vec<lockbench_decision::Assumption>,
    /// Print the decisions as JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `lockbench report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results directories written with --out (or folders holding them, as `run` writes).
    #[arg(required = true, value_name = "RESULTS_DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where to write report.md, report.html, charts/ and the alerting rules (default: report/
    /// inside the first results directory); it must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// How the results were made, for the record's first line (`run` says `lockbench run` or
    /// `lockbench run --quick` itself): "--made-by 'the staging pipeline'".
    #[arg(long, value_name = "TEXT")]
    pub made_by: Option<String>,
    #[command(flatten)]
    pub alerts: AlertArgs,
}

/// The monitoring the record's alerts are timed against (`report` and `run`).
#[derive(Debug, Args)]
pub struct AlertArgs {
    /// How often Prometheus scrapes the jobs' metrics and evaluates the rules: a page fires at the
    /// latest a scrape and an evaluation after its threshold.
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = crate::values::scrape_interval)]
    pub scrape_interval: std::time::Duration,
    /// How long the person paged needs to act: every page fires at least this long before the
    /// deadline it guards, or the record says it cannot and alerts on a leading signal.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::values::time_to_act)]
    pub time_to_act: std::time::Duration,
}

/// `lockbench run`.
#[derive(Debug, Args)]
pub struct MainJobArgs {
    /// Backend configuration (server URLs, namespace, timeouts).
    #[arg(long, value_name = "FILE", default_value = "lockbench.toml")]
    pub config: PathBuf,
    /// Fewer replays (and a heartbeat lease bounded at 1e-3 per run), shorter benchmarks, one
    /// trial of the fault cells the decision cites and fewer live runs: a few minutes in all.
    #[arg(long)]
    pub quick: bool,
    /// Where everything goes (default results/run-TIMESTAMP); it must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Folder of the workload specs to run.
    #[arg(long, value_name = "DIR", default_value = "workloads/specs")]
    pub specs: PathBuf,
    /// Seed of every simulation and replay (random when omitted).
    #[arg(long, value_name = "SEED", value_parser = crate::values::seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub alerts: AlertArgs,
}

/// `lockbench faults`.
#[derive(Debug, Args)]
pub struct FaultsArgs {
    /// Backend configuration; the protected resource is a schema in its pg-session Postgres.
    #[arg(long, value_name = "FILE", default_value = "lockbench.toml")]
    pub config: PathBuf,
    /// Scenario (pause, restart, redlock, pool-leak, partition, clock-jump, crash, failover,
    /// outage, pooler, release, overrun, latency, cluster) or one variant (pause/naive, restart/aof-always ...;
    /// docs/FAULTS.md); repeat for several (default: all but runner). `runner` runs the real
    /// BullMQ, Celery and pg-boss workers instead of a lock (scripts/clients.sh up installs them).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenarios: Vec<String>,
    /// Backend to inject faults into; repeat for several (default: every backend in the config
    /// that the scenarios apply to).
    #[arg(long = "backend", value_name = "NAME")]
    pub backends: Vec<String>,
    /// Lock through this client library's adapter (`lockbench clients`), on its
    /// backend, instead of lockbench's own client: the cells are the library's (every scenario
    /// of its backend but failover/wait, outage and release/after-expiry-plain-delete, which
    /// need lockbench's own client). Or the path of your own adapter (docs/CLIENTS.md), with
    /// the one --backend it locks on; its cells are named by its file.
    #[arg(long, value_name = "NAME")]
    pub client: Option<String>,
    /// Trials per (scenario, variant, backend) cell.
    #[arg(
        long,
        value_name = "N",
        default_value = "20",
        value_parser = crate::values::trials,
        allow_hyphen_values = true
    )]
    pub trials: u32,
    /// Cells run at once: a backend's cells on its shared server run one after another in one
    /// lane, so that no server has two faults at once; a cell with private servers runs on its
    /// own (1 runs every cell in order; a trial is mostly waiting, so lanes cost little CPU).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        value_parser = clap::value_parser!(u16).range(1..=8),
        allow_hyphen_values = true
    )]
    pub lanes: u16,
    /// Lock TTL asked for (etcd grants at least 2s, ZooKeeper at least 2 x its tickTime).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "2s",
        value_parser = crate::values::lab_ttl,
        allow_hyphen_values = true
    )]
    pub ttl: std::time::Duration,
    /// Seed of the fault timing (random when omitted; always stored).
    #[arg(long, value_name = "SEED", value_parser = crate::values::seed, allow_hyphen_values = true)]
    pub seed: Option<u64>,
    /// Print machine-readable JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write a results directory (matrix, trials, the resource's log); it must not exist or
    /// be empty.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Only remove what fault labs that are no longer running left behind (a lab killed with
    /// SIGKILL: its network namespace, subnet claim, private directories, Postgres schema, keys
    /// on the shared lock servers), say what, and exit. Every lab does this first anyway; a live
    /// lab's things are never touched.
    #[arg(long, conflicts_with_all = ["scenarios", "backends", "trials", "lanes", "ttl", "seed", "json", "out"])]
    pub clean: bool,
}

/// `lockbench fault-worker`.
#[derive(Debug, Args)]
pub struct FaultWorkerArgs {
    /// The process id of the `faults` run that started it (so that `ps` tells whose it is).
    #[arg(long, value_name = "PID")]
    pub lab: Option<u32>,
}

/// `lockbench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The results before (a results directory, or a folder of them as `run` writes).
    #[arg(value_name = "BEFORE")]
    pub before: PathBuf,
    /// The results after.
    #[arg(value_name = "AFTER")]
    pub after: PathBuf,
    /// Print machine-readable JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `lockbench merge`.
#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The shards' results directories, one per shard, in any order.
    #[arg(required = true, value_name = "DIR")]
    pub dirs: Vec<PathBuf>,
    /// Where the merged results directory goes; it must not exist or be empty.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Print the merged record as JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// `bench --topology`: the configured servers alone, or private clusters beside them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum TopologyArg {
    /// The configured servers.
    Single,
    /// Also a private three-member cluster of each etcd and ZooKeeper measured.
    Cluster,
}

/// `bench --keys`: the contenders' keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum KeysArg {
    /// Every contender on one key.
    One,
    /// A key each (no contention).
    Many,
}

/// `bench --wait-mode`: how a contender waits for a held lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WaitModeArg {
    /// The backend's own queue where it has one.
    Native,
    /// Polling with backoff.
    Poll,
}

impl AlertArgs {
    /// The settings the alerts are timed with: the rules evaluated as often as scraped.
    pub fn settings(&self) -> lockbench_decision::alerts::AlertSettings {
        lockbench_decision::alerts::AlertSettings {
            scrape: self.scrape_interval,
            evaluation: self.scrape_interval,
            act: self.time_to_act,
        }
    }
}
