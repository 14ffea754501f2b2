//! The in-process baseline: a mutex-guarded map. What the harness costs with no network at all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::{BackendConfig, BackendKind, Capabilities, Lease, LockBackend, LockError, new_token};

struct Held {
    token: String,
    expires: Instant,
}

#[derive(Default)]
struct State {
    held: HashMap<String, Held>,
    fencing: HashMap<String, u64>,
}

/// In-process locks with TTLs and fencing counters. Every client of one namespace in a process
/// shares one table, as clients of one server share its keys.
pub struct MemoryLock {
    namespace: String,
    state: Arc<Mutex<State>>,
}

/// The lock table of each namespace in this process.
fn table(namespace: &str) -> Arc<Mutex<State>> {
    static TABLES: OnceLock<Mutex<HashMap<String, Arc<Mutex<State>>>>> = OnceLock::new();
    TABLES
        .get_or_init(Default::default)
        .lock()
        .expect("table registry poisoned")
        .entry(namespace.to_string())
        .or_default()
        .clone()
}

impl MemoryLock {
    /// A client of the namespace's lock table.
    pub fn new(config: &BackendConfig) -> Self {
        MemoryLock {
            namespace: config.namespace.clone(),
            state: table(&config.namespace),
        }
    }

    fn key(&self, key: &str) -> String {
        format!("{}:{key}", self.namespace)
    }
}

#[async_trait]
impl LockBackend for MemoryLock {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: BackendKind::Memory.fencing(),
            native_ttl: true,
            wait_queue: false,
            native_wait: false,
            scope: BackendKind::Memory.scope(),
        }
    }

    async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError> {
        let key = self.key(key);
        let now = Instant::now();
        let mut state = self.state.lock().expect("lock table poisoned");
        if state.held.get(&key).is_some_and(|h| h.expires > now) {
            return Ok(None);
        }
        let token = new_token();
        let fencing = {
            let counter = state.fencing.entry(key.clone()).or_insert(0);
            *counter += 1;
            *counter
        };
        state.held.insert(
            key.clone(),
            Held {
                token: token.clone(),
                expires: now + ttl,
            },
        );
        Ok(Some(Lease {
            key,
            token,
            fencing: Some(fencing),
            ttl,
            acquired_at: now,
        }))
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<bool, LockError> {
        let now = Instant::now();
        let mut state = self.state.lock().expect("lock table poisoned");
        match state.held.get_mut(&lease.key) {
            Some(h) if h.token == lease.token && h.expires > now => {
                h.expires = now + ttl;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        let now = Instant::now();
        let mut state = self.state.lock().expect("lock table poisoned");
        match state.held.get(&lease.key) {
            Some(h) if h.token == lease.token => {
                let live = h.expires > now;
                state.held.remove(&lease.key);
                Ok(live)
            }
            _ => Ok(false),
        }
    }

    async fn cleanup(&self, key: &str) -> Result<(), LockError> {
        let key = self.key(key);
        let mut state = self.state.lock().expect("lock table poisoned");
        state.held.remove(&key);
        state.fencing.remove(&key);
        Ok(())
    }
}
