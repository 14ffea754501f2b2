//! Words more than one part of the decision says things with: a list in prose, and what a double
//! run does. A leaf: it imports no module of the crate.

use lockbench_workloads::DoubleRun;

/// Items joined in prose.
pub fn list(items: Vec<String>) -> String {
    match items.len() {
        0 => String::new(),
        1 => items[0].clone(),
        n => format!("{} and {}", items[..n - 1].join(", "), items[n - 1]),
    }
}

/// What a double run does, as a clause after "a second run".
pub fn effect(d: DoubleRun) -> &'static str {
    match d {
        DoubleRun::Absorbed => "is absorbed downstream",
        DoubleRun::WastedWork => "only wastes work",
        DoubleRun::Corrupts => "corrupts the job's data",
        DoubleRun::Charges => "charges customers twice",
    }
}
