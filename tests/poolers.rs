//! Postgres through PgBouncer, which `scripts/services.sh up` starts in front of the local
//! Postgres twice (deploy/poolers/: transaction mode on 6442, session mode on 6443). A session
//! advisory lock through the transaction-mode one is refused in one line with exit 2, by bench and
//! by the fault lab, before anything is measured; a transaction lock runs there, and a session
//! lock runs through the session-mode one.

mod common;

use common::{assert_refused, lockbench, refused};
use serde_json::Value;

const TRANSACTION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/deploy/poolers/pgbouncer-transaction.toml"
);
const SESSION: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/deploy/poolers/pgbouncer-session.toml"
);

fn bench(config: &str, backend: &str) -> std::process::Output {
    lockbench()
        .args(["bench", "--config", config, "--backend", backend])
        .args([
            "--contenders",
            "1,4",
            "--duration",
            "500ms",
            "--warmup",
            "0s",
        ])
        .arg("--json")
        .output()
        .unwrap()
}

#[test]
fn a_session_lock_is_refused_through_a_transaction_mode_pooler_and_runs_through_a_session_mode_one()
{
    let expected = [
        "pg-session: refused on postgres://postgres@127.0.0.1:6442/postgres",
        "a transaction-mode pooler is in the path",
        "use pg-xact, a direct connection to Postgres, or a session-mode pooler",
    ];
    assert_refused(&bench(TRANSACTION, "pg-session"), "bench", &expected);
    refused(
        &[
            "faults",
            "--config",
            TRANSACTION,
            "--backend",
            "pg-session",
            "--scenario",
            "crash/holder-killed",
            "--trials",
            "1",
        ],
        &expected,
    );
    // What works there: measured, every operation answered (a prepared statement through the
    // transaction-mode pooler would fail on the next server connection it is sent to).
    for (config, backend) in [(TRANSACTION, "pg-xact"), (SESSION, "pg-session")] {
        let out = bench(config, backend);
        assert!(
            out.status.success(),
            "{backend} through {config}: {}; start the poolers with scripts/services.sh up",
            String::from_utf8_lossy(&out.stderr)
        );
        let record: Value = serde_json::from_slice(&out.stdout).unwrap();
        let rows = record["results"].as_array().unwrap();
        assert_eq!(rows.len(), 2, "{record}");
        for row in rows {
            assert!(row["ops"].as_u64().unwrap() > 0, "{backend}: {row}");
            assert_eq!(row["errors"].as_u64(), Some(0), "{backend}: {row}");
        }
    }
}
