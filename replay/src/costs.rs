//! Keeping each call as long as the model asks, whatever a real call costs.

use lockbench_workloads::Target;

/// What one call may give to repaying earlier overruns: a share of its request, and at most an
/// absolute amount, so that long calls (the tail) stay as long as asked.
const MAX_REPAYMENT_SHARE: f64 = 0.25;
const MAX_REPAYMENT_NS: f64 = 200_000.0;
/// What one call may give to another step's overruns: a small share, so that the long calls (the
/// payment API) carry them and a short step's own distribution stays as asked.
const MAX_SHARED_REPAYMENT_SHARE: f64 = 0.05;
/// Overrun a step keeps to repay itself; beyond it, calls of every step share the repayment.
const SPILL_NS: f64 = 2_000_000.0;

/// The targets, in the order per-target figures are kept.
pub(crate) const TARGETS: [Target; 3] = [Target::Db, Target::Api, Target::Cpu];

pub(crate) fn target_index(t: Target) -> usize {
    TARGETS
        .iter()
        .position(|x| *x == t)
        .expect("every target listed")
}

/// Keeps a worker's calls at the length the model asks for: each hold is the request less the
/// measured cost of a call around its hold (per target), less part of what earlier calls overran.
/// A call whose real work is longer than its request (a 44 us compressed query that Postgres
/// answers in 120 us) cannot be shortened: its overrun is repaid by later calls of the same step,
/// a little at a time so that no call is shortened by much, and what a step cannot repay itself
/// (every one of its calls is too short) by calls of any step. The run's total, the runtime,
/// stays what the model asks for, and each step's own distribution as close as it can be.
#[derive(Clone, Debug, Default)]
pub(crate) struct CallCosts {
    pub(crate) cost_ns: [f64; 3],
    pub(crate) debt_ns: Vec<f64>,
    pub(crate) shared_debt_ns: f64,
}

impl CallCosts {
    /// The hold to ask for so that a call of step `step` to `target` takes `requested_ns`.
    pub(crate) fn hold_for(&mut self, step: usize, target: Target, requested_ns: f64) -> f64 {
        let budget = (MAX_REPAYMENT_SHARE * requested_ns).min(MAX_REPAYMENT_NS);
        // Signed: a step whose calls came in short (the cost was overestimated) gets longer holds.
        let own = self.debt_ns[step].clamp(-budget, budget);
        let shared_budget = (MAX_SHARED_REPAYMENT_SHARE * requested_ns).min(budget - own.max(0.0));
        let shared = self.shared_debt_ns.min(shared_budget).max(0.0);
        self.debt_ns[step] -= own;
        self.shared_debt_ns -= shared;
        (requested_ns - self.cost_ns[target_index(target)] - own - shared).max(0.0)
    }

    /// Books a call's overrun (or, negative, what it came in under) against its step.
    pub(crate) fn observe(&mut self, step: usize, requested_ns: f64, achieved_ns: f64) {
        let debt = &mut self.debt_ns[step];
        *debt = (*debt + achieved_ns - requested_ns).max(-SPILL_NS);
        if *debt > SPILL_NS {
            self.shared_debt_ns += *debt - SPILL_NS;
            *debt = SPILL_NS;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn costs() -> CallCosts {
        CallCosts {
            cost_ns: [50_000.0, 0.0, 0.0],
            debt_ns: vec![0.0; 2],
            shared_debt_ns: 0.0,
        }
    }

    #[test]
    fn holds_subtract_the_measured_cost_of_a_call() {
        let mut c = costs();
        assert_eq!(c.hold_for(0, Target::Db, 300_000.0), 250_000.0);
        assert_eq!(c.hold_for(0, Target::Db, 30_000.0), 0.0);
        assert_eq!(c.hold_for(1, Target::Api, 300_000.0), 300_000.0);
    }

    #[test]
    fn overruns_are_repaid_by_later_calls_a_little_at_a_time() {
        let mut c = costs();
        // A call asked for 100 us took 400 us: 300 us to repay.
        c.observe(0, 100_000.0, 400_000.0);
        // The next 1 ms call gives at most a quarter of itself and at most 200 us.
        assert_eq!(c.hold_for(0, Target::Db, 1_000_000.0), 750_000.0);
        assert_eq!(c.hold_for(0, Target::Db, 1_000_000.0), 850_000.0);
        assert_eq!(c.hold_for(0, Target::Db, 1_000_000.0), 950_000.0);
    }

    #[test]
    fn calls_that_came_in_short_lengthen_the_next_ones() {
        let mut c = costs();
        c.observe(1, 1_000_000.0, 900_000.0);
        assert_eq!(c.hold_for(1, Target::Api, 1_000_000.0), 1_100_000.0);
    }

    #[test]
    fn what_a_step_cannot_repay_itself_spills_to_every_step() {
        let mut c = costs();
        c.observe(0, 0.0, SPILL_NS + 100_000.0);
        assert_eq!(c.debt_ns[0], SPILL_NS);
        assert_eq!(c.shared_debt_ns, 100_000.0);
        // Step 1 (another step) repays the spilled part, 5 % of its request at a time.
        assert_eq!(c.hold_for(1, Target::Api, 1_000_000.0), 950_000.0);
        assert_eq!(c.hold_for(1, Target::Api, 1_000_000.0), 950_000.0);
        assert_eq!(c.shared_debt_ns, 0.0);
    }
}
