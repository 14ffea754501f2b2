//! One Redis server: `SET key token NX PX ttl` inside a script that also increments the key's
//! fencing counter, and compare-and-pexpire / compare-and-delete scripts for renew and release.
//!
//! Waiting for a held lock follows Redisson: a release publishes on the key's channel, and a
//! waiter subscribed to it tries again when the message comes, or when the holder's TTL runs out
//! (a message it missed, a holder that died), whichever is first. Redis keeps no queue: every
//! waiter wakes on a release and one wins. With `fair = true` the waiters queue in Redis instead
//! and are granted in arrival order ([`fair`]).

mod fair;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;

use super::redis_connection::{Lua, RedisConnection, Subscription};
use crate::error::{Operation, timed};
use crate::lease::joined;
use crate::{
    BackendConfig, BackendKind, Capabilities, FencingSource, Lease, LockBackend, LockError,
    Redacted, Requests, new_token,
};
use fair::{Answer, FairQueue, Names, fencing_name, lock_name};

/// Acquire and fence in one round trip: the counter moves only when the lock is granted.
const ACQUIRE: &str = r"
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
    return redis.call('INCR', KEYS[2])
end
return false";
/// Extends the TTL only for the token's owner.
pub(crate) const RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0";
/// Deletes only for the token's owner.
pub(crate) const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0";

/// Deletes only for the token's owner, and says so on the key's channel (ARGV[2]).
const RELEASE_NOTIFY: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('DEL', KEYS[1])
    redis.call('PUBLISH', ARGV[2], '1')
    return 1
end
return 0";

/// Opens a connection to one Redis server and checks it answers.
pub(crate) async fn connect_node(
    backend: BackendKind,
    url: &str,
    config: &BackendConfig,
) -> Result<RedisConnection, LockError> {
    let unreachable = |reason: String| LockError::Unreachable {
        backend,
        url: Redacted(url).to_string(),
        reason,
    };
    let conn = RedisConnection::open(url, config.connect_timeout)
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    answers(conn, config.connect_timeout)
        .await
        .map_err(unreachable)
}

/// `conn` once it answers PING within `timeout`; why not, otherwise.
async fn answers(conn: RedisConnection, timeout: Duration) -> Result<RedisConnection, String> {
    tokio::time::timeout(timeout, conn.query::<String>(&redis::cmd("PING")))
        .await
        .map_err(|_| format!("no answer to PING within {timeout:?}"))?
        .map_err(|e| e.to_string())?;
    Ok(conn)
}

/// Connects to the primary that the Sentinels at the configured URLs name `master`, and checks
/// it answers; an error names the Sentinels and what each said.
async fn through_sentinels(
    config: &BackendConfig,
    master: &str,
) -> Result<RedisConnection, LockError> {
    let urls: Vec<String> = config
        .urls
        .iter()
        .map(|u| Redacted(u).to_string())
        .collect();
    let unreachable = |reason: String| LockError::Unreachable {
        backend: BackendKind::Redis,
        url: format!("Sentinel {}", urls.join(",")),
        reason,
    };
    let conn = RedisConnection::through_sentinels(&config.urls, master, config.connect_timeout)
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    answers(conn, config.connect_timeout)
        .await
        .map_err(unreachable)
}

/// Redis single-node locks.
pub struct RedisLock {
    conn: RedisConnection,
    /// Requests on both connections (commands, SUBSCRIBE, UNSUBSCRIBE).
    requests: Requests,
    /// A waiter's subscriber connection, kept for the next wait.
    subscriber: tokio::sync::Mutex<Option<redis::aio::PubSub>>,
    /// A fair waiter's subscription to its own channel, kept for the next wait.
    fair_subscription: tokio::sync::Mutex<Option<Subscription>>,
    connect_timeout: Duration,
    /// When false, acquire is a plain `SET NX PX` and leases carry no fencing token.
    fencing: bool,
    /// Replicas that must acknowledge an acquisition (`WAIT`); 0: none.
    wait_replicas: u32,
    namespace: String,
    timeout: Duration,
    acquire: Lua,
    renew: Lua,
    release: Lua,
    /// The fair queue's side of this client, when `fair = true` (shared with the places of
    /// waits abandoned midway, which withdraw after the wait is gone).
    fair: Option<Arc<FairQueue>>,
    /// `redis`, or `redis-fair` with the fair queue.
    name: &'static str,
}

impl RedisLock {
    /// Connects to the first configured URL, or, with `sentinel_master`, to the primary the
    /// Sentinels at the configured URLs name.
    pub async fn connect(config: &BackendConfig) -> Result<Self, LockError> {
        let conn = match &config.sentinel_master {
            Some(master) => through_sentinels(config, master).await?,
            None => {
                let url = config.urls.first().ok_or_else(|| LockError::Unreachable {
                    backend: BackendKind::Redis,
                    url: String::new(),
                    reason: "no URL configured".into(),
                })?;
                connect_node(BackendKind::Redis, url, config).await?
            }
        };
        let requests = Requests::default();
        Ok(RedisLock {
            conn: conn.counted(requests.clone()),
            requests,
            subscriber: tokio::sync::Mutex::new(None),
            fair_subscription: tokio::sync::Mutex::new(None),
            connect_timeout: config.connect_timeout,
            fencing: config.fencing,
            wait_replicas: config.wait_replicas,
            namespace: config.namespace.clone(),
            timeout: config.operation_timeout,
            acquire: Lua::new(ACQUIRE),
            renew: Lua::new(RENEW),
            release: Lua::new(RELEASE_NOTIFY),
            fair: config.fair.then(|| {
                Arc::new(FairQueue::new(
                    new_token(),
                    config.waiter_timeout,
                    config.fencing,
                    config.operation_timeout,
                ))
            }),
            name: config.label(),
        })
    }

    /// Waits in `key`'s fair queue until granted or `deadline`, woken by a message on this
    /// client's channel, by the holder's TTL when at the head, and every third of the waiter
    /// timeout to keep its place (see [`fair`]).
    async fn acquire_fair(
        &self,
        fair: &Arc<FairQueue>,
        key: &str,
        ttl: Duration,
        deadline: tokio::time::Instant,
    ) -> Result<Option<Lease>, LockError> {
        let names = Names::of(&self.namespace, key);
        let mut slot = self.fair_subscription.lock().await;
        if slot.is_none() {
            // Subscribed once, for the connection's life: a release cannot come before it. An
            // operation like any other: a server that does not answer fails the acquisition
            // within the operation timeout (the fault lab's outage found it waiting 3 s for the
            // connection's own timeout instead).
            let channel = fair.channel(&self.namespace);
            *slot = Some(
                timed(
                    BackendKind::Redis,
                    Operation::Subscribe,
                    self.timeout,
                    async {
                        self.conn.subscribe(&channel).await.map_err(|e| {
                            LockError::server(BackendKind::Redis, Operation::Subscribe, e)
                        })
                    },
                )
                .await?,
            );
        }
        let token = new_token();
        let mut place = Place {
            fair: fair.clone(),
            conn: self.conn.clone(),
            names: names.clone(),
            key: key.to_string(),
            queued: false,
        };
        let mut closed = false;
        let outcome = async {
            loop {
                let sent = (self.wait_replicas > 0).then(Instant::now);
                let asked = fair.ask(&self.conn, &names, (key, &token), ttl, true);
                let (at_head, ttl_left) = match asked.await? {
                    Answer::Granted(fencing) => {
                        place.queued = false;
                        return self
                            .leased(key, names.lock.clone(), token, ttl, sent, fencing)
                            .await
                            .map(Some);
                    }
                    Answer::Queued { at_head, ttl_left } => (at_head, ttl_left),
                };
                place.queued = true;
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    place.queued = false;
                    fair.withdraw(&self.conn, &names, key).await?;
                    return Ok(None);
                }
                let mut wait = (fair.waiter_timeout / 3).min(deadline - now);
                if at_head && let Some(left) = ttl_left {
                    // A holder that died sends nothing: its TTL ends the wait.
                    wait = wait.min(left);
                }
                if closed {
                    // The subscriber connection is gone: poll until the wait ends.
                    tokio::time::sleep(wait.min(Duration::from_millis(20))).await;
                    continue;
                }
                let subscription = slot.as_mut().expect("opened above");
                let woken = tokio::time::timeout(wait, async {
                    // A message for another key this client waited on before is not ours.
                    loop {
                        if subscription.message().await? == key.as_bytes() {
                            return Ok::<(), redis::RedisError>(());
                        }
                    }
                })
                .await;
                if let Ok(Err(_)) = woken {
                    closed = true;
                }
            }
        }
        .await;
        if closed {
            *slot = None;
        }
        outcome
    }

    /// The lease of a grant of `lock_key` to `token`: after `WAIT` when replicas must
    /// acknowledge it (`sent` is when the grant's request went out).
    async fn leased(
        &self,
        key: &str,
        lock_key: String,
        token: String,
        ttl: Duration,
        sent: Option<Instant>,
        fencing: Option<u64>,
    ) -> Result<Lease, LockError> {
        // The key's TTL runs from the SET; waiting for replicas spends some of it.
        let ttl = match sent {
            Some(sent) => {
                self.replicated(key, &token, ttl).await?;
                ttl.saturating_sub(sent.elapsed())
            }
            None => ttl,
        };
        Ok(Lease {
            key: lock_key,
            token,
            fencing,
            ttl,
            acquired_at: Instant::now(),
        })
    }

    fn channel(&self, key: &str) -> String {
        joined(&[&self.namespace, ":released:", key])
    }

    /// Milliseconds left on `key`'s lock (0 when it is gone or has no expiry).
    async fn ttl_left(&self, key: &str) -> Result<u64, LockError> {
        let lock_key = self.key(key);
        let ms: i64 = timed(
            BackendKind::Redis,
            Operation::Acquire,
            self.timeout,
            async {
                self.conn
                    .query(redis::cmd("PTTL").arg(&lock_key))
                    .await
                    .map_err(|e| LockError::server(BackendKind::Redis, Operation::Acquire, e))
            },
        )
        .await?;
        Ok(ms.max(0) as u64)
    }

    /// Waits on the key's channel until granted or `deadline` (see the module's doc).
    async fn acquire_subscribed(
        &self,
        key: &str,
        ttl: Duration,
        deadline: tokio::time::Instant,
    ) -> Result<Option<Lease>, LockError> {
        use futures::StreamExt as _;
        let mut slot = self.subscriber.lock().await;
        if slot.is_none() {
            // The server the commands go to (through Sentinel, the primary it last named).
            let client = redis::Client::open(self.conn.server())
                .map_err(|e| LockError::server(BackendKind::Redis, Operation::Subscribe, e))?;
            let opened = tokio::time::timeout(self.connect_timeout, client.get_async_pubsub())
                .await
                .map_err(|_| {
                    LockError::server(
                        BackendKind::Redis,
                        Operation::Subscribe,
                        "no connection in time",
                    )
                })?
                .map_err(|e| LockError::server(BackendKind::Redis, Operation::Subscribe, e))?;
            *slot = Some(opened);
        }
        let pubsub = slot.as_mut().expect("opened above");
        let channel = self.channel(key);
        self.requests.sent();
        let subscribed = timed(
            BackendKind::Redis,
            Operation::Subscribe,
            self.timeout,
            async {
                pubsub
                    .subscribe(&channel)
                    .await
                    .map_err(|e| LockError::server(BackendKind::Redis, Operation::Subscribe, e))
            },
        )
        .await;
        if let Err(e) = subscribed {
            // A connection that failed once (a restarted server) is opened again next time.
            *slot = None;
            return Err(e);
        }
        let mut closed = false;
        let outcome = async {
            loop {
                // Tried after subscribing, so a release between the first try and the
                // subscription is not missed.
                if let Some(lease) = self.try_once(key, ttl).await? {
                    return Ok(Some(lease));
                }
                let now = tokio::time::Instant::now();
                if now >= deadline {
                    return Ok(None);
                }
                // The holder's TTL bounds the wait for a message it may never send.
                let left = Duration::from_millis(self.ttl_left(key).await?.max(1));
                let wait = left.min(deadline - now);
                if closed {
                    // The subscriber connection is gone: poll until the wait ends.
                    tokio::time::sleep(wait.min(Duration::from_millis(20))).await;
                    continue;
                }
                let mut messages = pubsub.on_message();
                if let Ok(None) = tokio::time::timeout(wait, messages.next()).await {
                    closed = true;
                }
            }
        }
        .await;
        // A subscriber left subscribed would wake on every later release of the key.
        self.requests.sent();
        let unsubscribed = timed(
            BackendKind::Redis,
            Operation::Unsubscribe,
            self.timeout,
            async {
                pubsub
                    .unsubscribe(&channel)
                    .await
                    .map_err(|e| LockError::server(BackendKind::Redis, Operation::Unsubscribe, e))
            },
        )
        .await;
        if closed || unsubscribed.is_err() {
            *slot = None;
        }
        outcome
    }

    /// The release script: deletes `key`'s lock (`lock_key`) if it still holds `token` and says
    /// so on the key's channel, or to the head of its fair queue; true when it deleted the lock.
    async fn release_by_token(
        &self,
        key: &str,
        lock_key: &str,
        token: &str,
    ) -> Result<bool, LockError> {
        if let Some(fair) = &self.fair {
            let names = Names::of(&self.namespace, key);
            return fair.release(&self.conn, &names, key, token).await;
        }
        let channel = self.channel(key);
        let mut call = self
            .release
            .call(1, 3, lock_key.len() + token.len() + channel.len());
        call.arg(lock_key).arg(token).arg(&channel);
        let done: i64 = timed(
            BackendKind::Redis,
            Operation::Release,
            self.timeout,
            async {
                self.release
                    .invoke(&self.conn, &call)
                    .await
                    .map_err(|e| LockError::server(BackendKind::Redis, Operation::Release, e))
            },
        )
        .await?;
        Ok(done == 1)
    }

    /// `WAIT n` after `operation` (a grant or a renewal), within the operation timeout or half
    /// the TTL, whichever is shorter: `Err` with what the replicas did when fewer than `n`
    /// acknowledged it.
    async fn acknowledged(&self, operation: Operation, ttl: Duration) -> Result<(), LockError> {
        let wait = self.timeout.min(ttl / 2);
        let acked: i64 = timed(BackendKind::Redis, operation, self.timeout + wait, async {
            self.conn
                .query(
                    redis::cmd("WAIT")
                        .arg(self.wait_replicas)
                        .arg(wait.as_millis() as u64),
                )
                .await
                .map_err(|e| LockError::server(BackendKind::Redis, operation, e))
        })
        .await?;
        if acked >= i64::from(self.wait_replicas) {
            return Ok(());
        }
        Err(LockError::server(
            BackendKind::Redis,
            operation,
            format!(
                "WAIT: {acked} of {} replicas acknowledged it within {wait:?}",
                self.wait_replicas
            ),
        ))
    }

    /// `WAIT n` after a grant: when fewer replicas acknowledge it, the key is released by its
    /// token and the acquisition fails: a failover could promote a replica without it.
    async fn replicated(&self, key: &str, token: &str, ttl: Duration) -> Result<(), LockError> {
        let acked = self.acknowledged(Operation::Acquire, ttl).await;
        if acked.is_err() {
            let _ = self.release_by_token(key, &self.key(key), token).await;
        }
        acked
    }

    /// `WAIT n` after a renewal: a renewal fewer replicas acknowledged is an error, not a
    /// success, so that a holder counts from its last renewal a failover would keep (a primary
    /// cut off from its replicas goes on extending a key the replicas let expire).
    async fn renewal_replicated(&self, ttl: Duration) -> Result<(), LockError> {
        self.acknowledged(Operation::Renew, ttl).await
    }

    /// One try for `key`'s lock: [`LockBackend::try_acquire`], called by [`LockBackend::acquire`]
    /// without the trait's boxed future (an allocation and a copy of its state per acquisition).
    async fn try_once(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError> {
        let lock_key = self.key(key);
        let token = new_token();
        let ttl_ms = ttl.as_millis() as u64;
        // Only a replicated acquisition needs to know when its SET went out.
        let sent = (self.wait_replicas > 0).then(Instant::now);
        // Some(Some(n)): granted with fencing token n; Some(None): granted without; None: held.
        let granted: Option<Option<u64>> = if let Some(fair) = &self.fair {
            let names = Names::of(&self.namespace, key);
            match fair
                .ask(&self.conn, &names, (key, &token), ttl, false)
                .await?
            {
                Answer::Granted(fencing) => Some(fencing),
                Answer::Queued { .. } => None,
            }
        } else {
            timed(
                BackendKind::Redis,
                Operation::Acquire,
                self.timeout,
                async {
                    let outcome = if self.fencing {
                        let fencing_key = self.fencing_key(key);
                        let mut call = self.acquire.call(
                            2,
                            4,
                            lock_key.len() + fencing_key.len() + token.len() + 20,
                        );
                        call.arg(&lock_key)
                            .arg(&fencing_key)
                            .arg(&token)
                            .arg(ttl_ms);
                        self.acquire
                            .invoke::<Option<u64>>(&self.conn, &call)
                            .await
                            .map(|f| f.map(Some))
                    } else {
                        // What a client sends for a plain lock, its room reserved.
                        let mut set =
                            redis::Cmd::with_capacity(6, 64 + lock_key.len() + token.len());
                        set.arg("SET")
                            .arg(&lock_key)
                            .arg(&token)
                            .arg("NX")
                            .arg("PX")
                            .arg(ttl_ms);
                        self.conn
                            .query::<redis::Value>(&set)
                            .await
                            .map(|reply| (reply == redis::Value::Okay).then_some(None))
                    };
                    outcome
                        .map_err(|e| LockError::server(BackendKind::Redis, Operation::Acquire, e))
                },
            )
            .await?
        };
        match granted {
            Some(fencing) => self
                .leased(key, lock_key, token, ttl, sent, fencing)
                .await
                .map(Some),
            None => Ok(None),
        }
    }

    fn key(&self, key: &str) -> String {
        lock_name(&self.namespace, key)
    }

    fn fencing_key(&self, key: &str) -> String {
        fencing_name(&self.namespace, key)
    }
}

#[async_trait]
impl LockBackend for RedisLock {
    fn name(&self) -> &'static str {
        self.name
    }

    fn requests(&self) -> Option<u64> {
        Some(self.requests.count())
    }

    async fn server_version(&self) -> Option<Result<String, LockError>> {
        Some(server_version(&self.conn, BackendKind::Redis, self.timeout).await)
    }

    fn client_library(&self) -> Option<&'static str> {
        Some(crate::clients::REDIS)
    }

    async fn server_clock_us(&self) -> Option<Result<u64, LockError>> {
        Some(
            timed(BackendKind::Redis, Operation::Time, self.timeout, async {
                self.conn
                    .query::<(u64, u64)>(&redis::cmd("TIME"))
                    .await
                    .map(|(s, us)| s * 1_000_000 + us)
                    .map_err(|e| LockError::server(BackendKind::Redis, Operation::Time, e))
            })
            .await,
        )
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: if self.fencing {
                BackendKind::Redis.fencing()
            } else {
                FencingSource::None
            },
            native_ttl: true,
            wait_queue: self.fair.is_some(),
            native_wait: true,
            scope: BackendKind::Redis.scope(),
        }
    }

    async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError> {
        self.try_once(key, ttl).await
    }

    async fn acquire(
        &self,
        key: &str,
        ttl: Duration,
        wait: Duration,
    ) -> Result<Option<Lease>, LockError> {
        let deadline = tokio::time::Instant::now() + wait;
        if let Some(fair) = &self.fair
            && !wait.is_zero()
        {
            // The first ask grants or queues: no try first, which would not queue.
            // Boxed, as the subscribed wait below: a held lock's wait is the rare path, and
            // inline its state would make every acquisition's future (moved into the trait's
            // box per call) several times larger.
            return Box::pin(self.acquire_fair(fair, key, ttl, deadline)).await;
        }
        if let Some(lease) = self.try_once(key, ttl).await? {
            return Ok(Some(lease));
        }
        if wait.is_zero() {
            return Ok(None);
        }
        Box::pin(self.acquire_subscribed(key, ttl, deadline)).await
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<bool, LockError> {
        let mut call = self
            .renew
            .call(1, 3, lease.key.len() + lease.token.len() + 20);
        call.arg(&lease.key)
            .arg(&lease.token)
            .arg(ttl.as_millis() as u64);
        let done: i64 = timed(BackendKind::Redis, Operation::Renew, self.timeout, async {
            self.renew
                .invoke(&self.conn, &call)
                .await
                .map_err(|e| LockError::server(BackendKind::Redis, Operation::Renew, e))
        })
        .await?;
        if done == 1 && self.wait_replicas > 0 {
            self.renewal_replicated(ttl).await?;
        }
        Ok(done == 1)
    }

    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        // The lease's key is the namespaced lock key; its channel is named after the logical key.
        let logical = lease
            .key
            .strip_prefix(self.namespace.as_str())
            .and_then(|rest| rest.strip_prefix(":lock:"))
            .unwrap_or(&lease.key);
        self.release_by_token(logical, &lease.key, &lease.token)
            .await
    }

    /// `DEL` of the lease's lock key, whoever's token it holds; the waiters are not told.
    async fn delete_unchecked(&self, lease: &Lease) -> Option<Result<bool, LockError>> {
        Some(
            timed(
                BackendKind::Redis,
                Operation::Release,
                self.timeout,
                async {
                    self.conn
                        .query::<i64>(redis::cmd("DEL").arg(&lease.key))
                        .await
                        .map(|n| n == 1)
                        .map_err(|e| LockError::server(BackendKind::Redis, Operation::Release, e))
                },
            )
            .await,
        )
    }

    /// Every key under the namespace (`namespace:*`), in use or not: fencing counters have no
    /// TTL, and a fault lab killed with SIGKILL on a shared server leaves them under its run's
    /// namespace.
    async fn purge_namespace(&self) -> Result<(), LockError> {
        let pattern = joined(&[&glob_escaped(&self.namespace), ":*"]);
        let mut cursor = 0u64;
        loop {
            let (next, keys): (u64, Vec<String>) = timed(
                BackendKind::Redis,
                Operation::Cleanup,
                self.timeout,
                async {
                    self.conn
                        .query(
                            redis::cmd("SCAN")
                                .arg(cursor)
                                .arg("MATCH")
                                .arg(&pattern)
                                .arg("COUNT")
                                .arg(1000),
                        )
                        .await
                        .map_err(|e| LockError::server(BackendKind::Redis, Operation::Cleanup, e))
                },
            )
            .await?;
            if !keys.is_empty() {
                timed(
                    BackendKind::Redis,
                    Operation::Cleanup,
                    self.timeout,
                    async {
                        self.conn
                            .query::<i64>(redis::cmd("DEL").arg(&keys))
                            .await
                            .map_err(|e| {
                                LockError::server(BackendKind::Redis, Operation::Cleanup, e)
                            })
                    },
                )
                .await?;
            }
            if next == 0 {
                return Ok(());
            }
            cursor = next;
        }
    }

    async fn cleanup(&self, key: &str) -> Result<(), LockError> {
        let names = Names::of(&self.namespace, key);
        let keys = [names.lock, names.fencing, names.queue, names.deadlines];
        timed(
            BackendKind::Redis,
            Operation::Cleanup,
            self.timeout,
            async {
                self.conn
                    .query::<i64>(redis::cmd("DEL").arg(&keys))
                    .await
                    .map(|_| ())
                    .map_err(|e| LockError::server(BackendKind::Redis, Operation::Cleanup, e))
            },
        )
        .await
    }
}

/// `text` matched literally in a `SCAN MATCH` pattern: Redis's glob characters escaped.
fn glob_escaped(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A fair wait's place in the queue while it is not granted: given up (the waiter withdrawn from
/// a task spawned on drop) when the wait is abandoned midway, so that the queue does not wait
/// out the waiter timeout for a waiter gone.
struct Place {
    fair: Arc<FairQueue>,
    conn: RedisConnection,
    names: Names,
    key: String,
    queued: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.queued
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            let fair = self.fair.clone();
            let conn = self.conn.clone();
            let names = self.names.clone();
            let key = std::mem::take(&mut self.key);
            runtime.spawn(async move {
                let _ = fair.withdraw(&conn, &names, &key).await;
            });
        }
    }
}

/// The `redis_version` of a node's `INFO server`.
pub(crate) async fn server_version(
    conn: &RedisConnection,
    backend: BackendKind,
    timeout: Duration,
) -> Result<String, LockError> {
    timed(backend, Operation::Info, timeout, async {
        let info: String = conn
            .query(redis::cmd("INFO").arg("server"))
            .await
            .map_err(|e| LockError::server(backend, Operation::Info, e))?;
        Ok(info
            .lines()
            .find_map(|l| l.strip_prefix("redis_version:"))
            .map_or_else(|| "unknown".to_string(), |v| v.trim().to_string()))
    })
    .await
}
