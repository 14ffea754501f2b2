//! What lockbench's look for a transaction-mode pooler costs (once per Postgres URL per process,
//! at the first connection): a connection alone against a connection and the look, on the local
//! Postgres that `scripts/services.sh up` starts (lockbench.toml's, 127.0.0.1:5442), and through
//! the transaction-mode PgBouncer it starts in front of it (127.0.0.1:6442), where the look finds
//! it. `LOCKBENCH_PG_URL` and `LOCKBENCH_PGBOUNCER_URL` name others.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use lockbench_locks::backends::postgres::look_for_pooler;
use sqlx::{ConnectOptions, Connection};

fn url(variable: &str, default: &str) -> String {
    std::env::var(variable).unwrap_or_else(|_| default.to_string())
}

fn pooler(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let direct = url(
        "LOCKBENCH_PG_URL",
        "postgres://postgres@127.0.0.1:5442/postgres",
    );
    let pooled = url(
        "LOCKBENCH_PGBOUNCER_URL",
        "postgres://postgres@127.0.0.1:6442/postgres",
    );
    let within = Duration::from_secs(3);
    for (name, url, found) in [
        ("direct", &direct, false),
        ("pgbouncer-transaction", &pooled, true),
    ] {
        let look = runtime
            .block_on(look_for_pooler(url, within))
            .unwrap_or_else(|e| {
                panic!(
                    "cannot reach {url}: {e}; start the local servers with scripts/services.sh up"
                )
            });
        assert_eq!(look.is_some(), found, "{name}: {look:?}");
        let options: sqlx::postgres::PgConnectOptions = url.parse().unwrap();
        c.bench_function(&format!("postgres-connect-{name}"), |b| {
            b.iter(|| {
                runtime.block_on(async {
                    let conn = options.connect().await.unwrap();
                    conn.close().await.unwrap();
                })
            })
        });
        c.bench_function(&format!("postgres-connect-and-look-{name}"), |b| {
            b.iter(|| black_box(runtime.block_on(look_for_pooler(url, within)).unwrap()))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(50).measurement_time(Duration::from_secs(5));
    targets = pooler
}
criterion_main!(benches);
