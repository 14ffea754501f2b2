//! The shipped adapters against the real servers `scripts/services.sh up` starts, with the
//! libraries `scripts/clients.sh up` installs: each passes the protocol's checks, a broken one
//! fails naming the check, and kazoo tells its user of a lost session.

use std::time::Duration;

use lockbench_clients::{AdapterLock, Program, conformance};
use lockbench_core::{BackendKind, Client};
use lockbench_locks::{BackendConfig, LockBackend};

const SERVERS: &str =
    "the adapter tests talk to the real servers: scripts/services.sh up starts them";

/// `kind`'s entry in the repository's lockbench.toml, under a namespace of this test.
fn config(kind: BackendKind, tag: &str) -> BackendConfig {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../lockbench.toml"))
        .expect("lockbench.toml at the repository root");
    let mut config = lockbench_locks::parse_config(&text)
        .expect("lockbench.toml parses")
        .into_iter()
        .find(|c| c.kind == kind)
        .unwrap_or_else(|| panic!("lockbench.toml configures {kind}"));
    config.namespace = format!("lbclients-{tag}-{}", std::process::id());
    config
}

/// The shipped adapter, or a failure saying how to install it.
fn shipped(client: Client) -> Program {
    lockbench_clients::program(client).unwrap_or_else(|e| panic!("{e}"))
}

#[tokio::test]
async fn every_shipped_adapter_keeps_the_protocol_against_its_server() {
    for client in Client::ALL {
        let config = config(client.backend(), client.name());
        let result = conformance::check(&shipped(client), &config)
            .await
            .unwrap_or_else(|e| panic!("{e}; {SERVERS}"));
        let failed: Vec<_> = result.checks.iter().filter(|c| !c.passed).collect();
        assert!(failed.is_empty(), "{client}: {failed:?}");
        assert!(result.checks.len() >= 8, "{client}: {:?}", result.checks);
        assert!(
            result.library.starts_with(client.name()),
            "{client} described itself as {}",
            result.library
        );
    }
}

#[tokio::test]
async fn an_adapter_that_stamps_with_the_wall_clock_fails_at_its_first_stamped_reply() {
    let mut program = shipped(Client::RedisPy);
    // The shipped adapter's interpreter, running the broken adapter.
    program.argv[1] = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/adapters/wall_clock.py").into();
    program.name = "wall_clock.py".to_string();
    program.client = None;
    let result = conformance::check(&program, &config(BackendKind::Redis, "wall"))
        .await
        .unwrap_or_else(|e| panic!("{e}; {SERVERS}"));
    let failed = result
        .checks
        .iter()
        .find(|c| !c.passed)
        .expect("a wall-clock stamp fails a check");
    assert_eq!(failed.name, "acquire a free key");
    assert!(failed.detail.contains("CLOCK_MONOTONIC"), "{failed:?}");
}

#[tokio::test]
async fn an_unknown_adapter_and_a_missing_program_are_refused_in_one_line() {
    let unknown = lockbench_clients::resolve("jedis").unwrap_err().to_string();
    assert!(unknown.contains("unknown client \"jedis\""), "{unknown}");
    assert!(unknown.contains("redis-py"), "{unknown}");
    let missing = lockbench_clients::resolve("./no/such/adapter")
        .unwrap_err()
        .to_string();
    assert!(
        missing.contains("./no/such/adapter: cannot start it"),
        "{missing}"
    );
    assert_eq!(unknown.lines().count() + missing.lines().count(), 2);
}

/// kazoo's lock lives as long as its session. Frozen past the session timeout (as a
/// stop-the-world pause freezes kazoo's own heartbeat thread), the session expires on the server;
/// when the process runs again, kazoo tells its user (`KazooState.LOST`), which the adapter
/// pushes as a `lost` event, stamped on the lab's clock.
#[tokio::test]
async fn kazoo_tells_its_user_of_a_session_lost_while_it_was_frozen() {
    let mut config = config(BackendKind::Zookeeper, "lost");
    // The shortest session the local ZooKeeper grants (2 ticks of 2 s).
    config.session_timeout = Duration::from_secs(4);
    let adapter = AdapterLock::start(&shipped(Client::Kazoo), &config)
        .await
        .unwrap_or_else(|e| panic!("{e}; {SERVERS}"));
    assert!(adapter.description().notifies_loss);
    let lease = adapter
        .try_acquire("frozen", Duration::from_secs(4))
        .await
        .expect("kazoo acquires")
        .expect("the key is free");
    let pid = rustix::process::Pid::from_raw(adapter.pid().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
    tokio::time::sleep(Duration::from_secs(7)).await;
    let resumed = conformance::monotonic_ns();
    rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let lost = loop {
        if let Some(e) = adapter
            .events()
            .into_iter()
            .find(|e| e.kind == lockbench_clients::EventKind::Lost)
        {
            break e;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no lost event within 15 s of the resume: {:?}",
            adapter.events()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(lost.key, "frozen");
    assert!(lost.t_ns >= resumed, "the event predates the resume");
    assert!(
        !adapter.renew(&lease, Duration::from_secs(4)).await.unwrap(),
        "kazoo still says it holds a lock whose session expired"
    );
    let _ = adapter.close().await;
    conformance::remove_leftovers(&config, "frozen").await;
}

/// tooz's Postgres lock takes `pg_advisory_lock(a, b)` with a and b the first two bytes of the
/// MD5 of the lock's name: two different names whose digests share those bytes are one lock.
/// The names are found by the search a birthday bound predicts (a few hundred names).
#[tokio::test]
async fn tooz_locks_two_names_that_share_two_bytes_of_md5_as_one() {
    let config = config(BackendKind::PgSession, "tooz");
    let program = shipped(Client::ToozPg);
    // The adapter's own interpreter finds two names of this namespace that collide.
    let search = format!(
        "import hashlib\nseen = {{}}\nfor i in range(100000):\n    k = f'k{{i}}'\n    d = hashlib.md5(f'{ns}:client:{{k}}'.encode()).digest()[:2]\n    if d in seen:\n        print(seen[d], k)\n        break\n    seen[d] = k\n",
        ns = config.namespace
    );
    let out = std::process::Command::new(&program.argv[0])
        .args(["-c", &search])
        .output()
        .expect("the Python scripts/clients.sh up installed");
    let found = String::from_utf8(out.stdout).unwrap();
    let (first, second) = found
        .trim()
        .split_once(' ')
        .unwrap_or_else(|| panic!("no collision found: {found}"));
    assert_ne!(first, second);
    let a = AdapterLock::start(&program, &config)
        .await
        .unwrap_or_else(|e| panic!("{e}; {SERVERS}"));
    let b = AdapterLock::start(&program, &config)
        .await
        .unwrap_or_else(|e| panic!("{e}; {SERVERS}"));
    let ttl = Duration::from_secs(1);
    let lease = a
        .try_acquire(first, ttl)
        .await
        .unwrap()
        .expect("the first name is free");
    assert!(
        b.try_acquire(second, ttl).await.unwrap().is_none(),
        "tooz granted {second} while {first}, another name with the same two bytes of MD5, was held"
    );
    assert!(a.release(&lease).await.unwrap());
    let other = b
        .try_acquire(second, ttl)
        .await
        .unwrap()
        .expect("free once the first name is released");
    assert!(b.release(&other).await.unwrap());
    let _ = a.close().await;
    let _ = b.close().await;
}
