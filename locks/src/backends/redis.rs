//! One Redis server: `SET key token NX PX ttl` inside a script that also increments the key's
//! fencing counter, and compare-and-pexpire / compare-and-delete scripts for renew and release.

use std::time::{Duration, Instant};

use async_trait::async_trait;
use redis::Script;

use super::redis_connection::RedisConnection;
use crate::error::timed;
use crate::{
    BackendConfig, Capabilities, FencingSource, Lease, LockBackend, LockError, LockScope, Redacted,
    new_token,
};

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

/// Opens a connection to one Redis server and checks it answers.
pub(crate) async fn connect_node(
    backend: &'static str,
    url: &str,
    config: &BackendConfig,
) -> Result<RedisConnection, LockError> {
    let unreachable = |reason: String| LockError::Unreachable {
        backend,
        url: Redacted(url).to_string(),
        reason,
    };
    let mut conn = RedisConnection::open(url, config.connect_timeout)
        .await
        .map_err(|e| unreachable(e.to_string()))?;
    tokio::time::timeout(
        config.connect_timeout,
        redis::cmd("PING").query_async::<String>(&mut conn),
    )
    .await
    .map_err(|_| {
        unreachable(format!(
            "no answer to PING within {:?}",
            config.connect_timeout
        ))
    })?
    .map_err(|e| unreachable(e.to_string()))?;
    Ok(conn)
}

/// Redis single-node locks.
pub struct RedisLock {
    conn: RedisConnection,
    /// When false, acquire is a plain `SET NX PX` and leases carry no fencing token.
    fencing: bool,
    namespace: String,
    timeout: Duration,
    acquire: Script,
    renew: Script,
    release: Script,
}

impl RedisLock {
    /// Connects to the first configured URL.
    pub async fn connect(config: &BackendConfig) -> Result<Self, LockError> {
        let url = config.urls.first().ok_or_else(|| LockError::Unreachable {
            backend: "redis",
            url: String::new(),
            reason: "no URL configured".into(),
        })?;
        Ok(RedisLock {
            conn: connect_node("redis", url, config).await?,
            fencing: config.fencing,
            namespace: config.namespace.clone(),
            timeout: config.operation_timeout,
            acquire: Script::new(ACQUIRE),
            renew: Script::new(RENEW),
            release: Script::new(RELEASE),
        })
    }

    fn key(&self, key: &str) -> String {
        format!("{}:lock:{key}", self.namespace)
    }

    fn fencing_key(&self, key: &str) -> String {
        format!("{}:fencing:{key}", self.namespace)
    }
}

#[async_trait]
impl LockBackend for RedisLock {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            fencing: if self.fencing {
                FencingSource::Counter
            } else {
                FencingSource::None
            },
            native_ttl: true,
            wait_queue: false,
            native_wait: false,
            scope: LockScope::Key,
        }
    }

    async fn try_acquire(&self, key: &str, ttl: Duration) -> Result<Option<Lease>, LockError> {
        let lock_key = self.key(key);
        let token = new_token();
        let mut conn = self.conn.clone();
        let ttl_ms = ttl.as_millis() as u64;
        // Some(Some(n)): granted with fencing token n; Some(None): granted without; None: held.
        let granted: Option<Option<u64>> = timed("redis", "acquire", self.timeout, async {
            let outcome = if self.fencing {
                self.acquire
                    .key(&lock_key)
                    .key(self.fencing_key(key))
                    .arg(&token)
                    .arg(ttl_ms)
                    .invoke_async::<Option<u64>>(&mut conn)
                    .await
                    .map(|f| f.map(Some))
            } else {
                redis::cmd("SET")
                    .arg(&lock_key)
                    .arg(&token)
                    .arg("NX")
                    .arg("PX")
                    .arg(ttl_ms)
                    .query_async::<Option<String>>(&mut conn)
                    .await
                    .map(|ok| ok.map(|_| None))
            };
            outcome.map_err(|e| LockError::server("redis", "acquire", e))
        })
        .await?;
        Ok(granted.map(|fencing| Lease {
            key: lock_key,
            token,
            fencing,
            ttl,
            acquired_at: Instant::now(),
        }))
    }

    async fn renew(&self, lease: &Lease, ttl: Duration) -> Result<bool, LockError> {
        let mut conn = self.conn.clone();
        let done: i64 = timed("redis", "renew", self.timeout, async {
            self.renew
                .key(&lease.key)
                .arg(&lease.token)
                .arg(ttl.as_millis() as u64)
                .invoke_async(&mut conn)
                .await
                .map_err(|e| LockError::server("redis", "renew", e))
        })
        .await?;
        Ok(done == 1)
    }

    async fn release(&self, lease: &Lease) -> Result<bool, LockError> {
        let mut conn = self.conn.clone();
        let done: i64 = timed("redis", "release", self.timeout, async {
            self.release
                .key(&lease.key)
                .arg(&lease.token)
                .invoke_async(&mut conn)
                .await
                .map_err(|e| LockError::server("redis", "release", e))
        })
        .await?;
        Ok(done == 1)
    }

    async fn cleanup(&self, key: &str) -> Result<(), LockError> {
        let mut conn = self.conn.clone();
        let keys = [self.key(key), self.fencing_key(key)];
        timed("redis", "cleanup", self.timeout, async {
            redis::cmd("DEL")
                .arg(&keys)
                .query_async::<i64>(&mut conn)
                .await
                .map(|_| ())
                .map_err(|e| LockError::server("redis", "cleanup", e))
        })
        .await
    }
}
