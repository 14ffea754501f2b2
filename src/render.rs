//! Terminal output: the tables and the recommendation as people read them, from the typed records
//! alone.

mod bench;
mod calibrate;
mod check;
mod clients;
mod compare;
mod decision;
mod faults;
mod replay;
mod simulate;
mod table;
mod ttl;
pub use bench::bench_table;
pub use calibrate::calibration_text;
pub use check::check_text;
pub use clients::clients_table;
pub use compare::comparison_text;
pub use decision::decisions;
pub use faults::{fault_matrix, swept};
pub use replay::replay_summary;
pub use simulate::simulation_text;
pub use ttl::{rejected_model, ttl_report};

/// A command's record on stdout: its JSON with `--json` (what `results.json` holds), else `text`
/// of it. The one place a command chooses between the two.
pub fn show<T: serde::Serialize>(
    json: bool,
    record: &T,
    text: impl FnOnce(&T) -> String,
) -> std::io::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    if json {
        stdout.write_all(&lockbench_core::records::to_json(record))
    } else {
        stdout.write_all(text(record).as_bytes())
    }
}
