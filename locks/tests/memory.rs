//! The tests that need no server: the in-process `memory` backend (the harness's own cost, which
//! every real backend's figure is read against) keeps the contract, and a server backend whose
//! server is missing says which server and how to start it. Memory's three tests are here with
//! that check rather than in a binary of their own: a test binary costs a link.

use std::time::Duration;

use lockbench_locks::{BackendKind, LockError, connect};

mod common;
use common::{backend_tests, config, ttl_expires_and_renew_extends};

backend_tests!(memory, BackendKind::Memory);

#[tokio::test]
async fn ttl_memory() {
    ttl_expires_and_renew_extends(BackendKind::Memory, Duration::from_secs(2)).await;
}

#[tokio::test]
async fn an_unreachable_server_says_how_to_start_it() {
    let mut dead = config(BackendKind::Redis, "dead");
    dead.urls = vec!["redis://127.0.0.1:1".to_string()];
    let error = connect(&dead)
        .await
        .err()
        .expect("nothing listens on port 1");
    assert!(matches!(error, LockError::Unreachable { .. }));
    let text = error.to_string();
    assert!(
        text.contains("redis://127.0.0.1:1") && text.contains("scripts/services.sh up"),
        "{text}"
    );
    let mut dead = config(BackendKind::PgSession, "dead");
    dead.urls = vec!["postgres://postgres:secret@127.0.0.1:1/postgres".to_string()];
    let text = connect(&dead)
        .await
        .err()
        .expect("nothing listens on port 1")
        .to_string();
    assert!(!text.contains("secret"), "password leaked: {text}");
}

/// What a test meets when the server it needs is missing (each server backend pointed at a port
/// nothing listens on): a refusal naming the backend and the URL and saying how to start the
/// local servers, within the connect timeout. `common::client` fails a test with this line.
#[tokio::test]
async fn every_server_backend_names_its_missing_server_and_how_to_start_it() {
    for (kind, urls) in [
        (BackendKind::Redis, vec!["redis://127.0.0.1:1"]),
        (
            BackendKind::Redlock,
            vec![
                "redis://127.0.0.1:1",
                "redis://127.0.0.1:2",
                "redis://127.0.0.1:3",
            ],
        ),
        (
            BackendKind::PgSession,
            vec!["postgres://postgres@127.0.0.1:1/postgres"],
        ),
        (
            BackendKind::PgXact,
            vec!["postgres://postgres@127.0.0.1:1/postgres"],
        ),
        (BackendKind::Etcd, vec!["http://127.0.0.1:1"]),
        (BackendKind::Zookeeper, vec!["127.0.0.1:1"]),
    ] {
        let mut dead = config(kind, "missing");
        dead.urls = urls.iter().map(|u| u.to_string()).collect();
        let started = std::time::Instant::now();
        let error = connect(&dead)
            .await
            .err()
            .unwrap_or_else(|| panic!("{}: nothing listens on {urls:?}", kind.name()));
        assert!(
            started.elapsed() < dead.connect_timeout + Duration::from_secs(2),
            "{}: refused only after {:?}",
            kind.name(),
            started.elapsed()
        );
        assert!(
            matches!(error, LockError::Unreachable { .. }),
            "{}: {error:?}",
            kind.name()
        );
        let text = error.to_string();
        assert!(text.starts_with(kind.name()), "{text}");
        assert!(text.contains("127.0.0.1:1"), "{text}");
        assert!(text.contains("scripts/services.sh up"), "{text}");
    }
}
