//! A fault as a value: what a variant needs on this machine, what it sets up for its cell, and the
//! phases of each of its trials. The trial runner (`phases::run`) calls the phases in order and
//! knows no scenario by name; [`of`] is the one table from a [`Variant`] to its fault.
//!
//! The phases of a trial, in order:
//!
//! 1. **shape**: the workers' plans (the job's length and writes, where each worker locks, what
//!    the contender does when its acquisition fails, when the fault begins, whether it kills
//!    the holder);
//! 2. **before**: the cell's servers readied before the workers start (a snapshot taken);
//! 3. **acquire**: while the holder acquires (a node or a replica held back);
//! 4. **inject**: the fault itself, from its onset to its end (a pause, a kill, a cut); the
//!    runner then waits for the holder's job, or reaps a holder the fault killed;
//! 5. **heal**: the cell put back as it was, for the next trial (clocks, a failed-over primary).
//!
//! The judging is the same for every fault: the protected resource's log of the trial
//! (`overlap::figures`). A new variant of a scenario is an arm in that scenario's file; a new
//! scenario is a row in [`of`] and one file here
//! that implements [`Fault`] (docs/ARCHITECTURE.md lists the rest: its name, its rule, its
//! test).

mod clock_jump;
mod cluster;
mod crash;
mod failover;
mod latency;
mod outage;
mod overrun;
mod partition;
mod pause;
mod phases;
mod pool_leak;
mod pooler;
mod redlock;
mod release;
mod restart;
mod sentinel;

use crate::scenario::Variant;

pub(crate) use phases::Fault;

/// The fault of `variant`: one row per scenario.
pub(crate) fn of(variant: Variant) -> Box<dyn Fault> {
    use lockbench_core::fault::Scenario;
    match variant.scenario() {
        Scenario::Pause => Box::new(pause::Pause(variant)),
        Scenario::Restart => Box::new(restart::Restart(variant)),
        Scenario::Redlock => Box::new(redlock::Redlock(variant)),
        Scenario::PoolLeak => Box::new(pool_leak::PoolLeak(variant)),
        Scenario::Partition => Box::new(partition::Partition(variant)),
        Scenario::ClockJump => Box::new(clock_jump::ClockJump),
        Scenario::Crash => Box::new(crash::Crash(variant)),
        Scenario::Failover => Box::new(failover::Failover(variant)),
        Scenario::Outage => Box::new(outage::Outage(variant)),
        Scenario::Pooler => Box::new(pooler::Pooler(variant)),
        Scenario::Release => Box::new(release::Release(variant)),
        Scenario::Overrun => Box::new(overrun::Overrun(variant)),
        Scenario::Latency => Box::new(latency::Latency(variant)),
        Scenario::Cluster => match variant {
            Variant::ClusterSentinelFailover { .. }
            | Variant::ClusterSentinelPrimaryIsolated { .. } => {
                Box::new(sentinel::SentinelFailover(variant))
            }
            _ => Box::new(cluster::Cluster(variant)),
        },
    }
}
