//! What the adapter protocol itself costs: a request's round trip through a Python adapter that
//! answers at once, with no library behind it (`clients/tests/adapters/echo.py`, run by the
//! interpreter `scripts/clients.sh up` installs). A library's figures in `bench --client` include
//! this much; lockbench's own client pays none of it.
//!
//! `cargo bench --profile dev -p lockbench-clients --bench protocol`

use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use lockbench_clients::protocol::Request;
use lockbench_clients::{AdapterLock, Program};
use lockbench_locks::{BackendConfig, BackendKind, LockBackend};

fn echo() -> Program {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    Program {
        name: "echo".to_string(),
        client: None,
        argv: vec![
            format!("{root}/target/clients/python/bin/python").into(),
            format!("{root}/clients/tests/adapters/echo.py").into(),
        ],
    }
}

fn round_trip(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let config = BackendConfig::new(BackendKind::Redis, vec![], "bench");
    let adapter = runtime
        .block_on(AdapterLock::start(&echo(), &config))
        .unwrap_or_else(|e| panic!("{e}; scripts/clients.sh up installs the interpreter"));
    let mut id = 0;
    c.bench_function("held round trip through a Python adapter", |b| {
        b.iter(|| {
            id += 1;
            let request = Request::Held {
                id,
                key: "k".to_string(),
            };
            runtime
                .block_on(adapter.request(request, Duration::from_secs(5)))
                .unwrap()
        })
    });
    let lease = runtime
        .block_on(adapter.try_acquire("k", Duration::from_secs(1)))
        .unwrap()
        .unwrap();
    c.bench_function("acquire and release through a Python adapter", |b| {
        b.iter(|| {
            runtime
                .block_on(adapter.try_acquire("k", Duration::from_secs(1)))
                .unwrap();
            runtime.block_on(adapter.release(&lease)).unwrap()
        })
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = round_trip
}
criterion_main!(benches);
