//! The fair queue of Redis (`fair = true`): waiters queue in Redis and are granted in arrival
//! order, as Redisson's fair lock does, where the plain lock lets every waiter race for each
//! release and the releaser, already running, usually wins (Jain fairness 0.48 at 4 contenders).
//!
//! Per lock key, beside the lock itself: a list of waiters in arrival order (`{ns}:queue:{key}`)
//! and a sorted set of each waiter's deadline by the server's clock (`{ns}:queue-deadlines:{key}`).
//! A waiter is a client (its id, made at connect); it renews its deadline every third of the
//! waiter timeout while it waits, and every script first drops the waiters whose deadline has
//! passed, so a waiter that died holds the queue up for one waiter timeout at most. Both keys
//! expire a waiter timeout after the last waiter renewed its place (never sooner than any
//! waiter's deadline), so a queue whose waiters were all killed leaves nothing behind. The lock is
//! granted only when it is free and the caller is at the head of the queue (or the queue is
//! empty): a try, the releaser coming back and a newcomer all go behind the waiters.
//!
//! Each client listens on its own channel (`{ns}:granted:{waiter}`, subscribed once and kept); a
//! release deletes the lock and publishes the key on the head's channel, so a release wakes the
//! next waiter alone, which then takes the lock in one script. A withdrawal (a wait that ran out
//! or was abandoned), or a dead head dropped, wakes the new head the same way. A waiter at the
//! head also wakes when the holder's TTL runs out (a holder that died sends nothing).
//!
//! Where Redisson gives each waiter a timeout chained to its predecessor's (so that a queue of
//! long holders does not drop the waiters behind them), a waiter here keeps its own place alive:
//! a place is lost only by a waiter that stopped asking, whatever the holders do.

use std::time::Duration;

use crate::LockError;
use crate::backends::redis_connection::{Lua, RedisConnection};
use crate::error::{Operation, timed};
use crate::lease::joined;
use lockbench_core::BackendKind;

/// Drops the waiters whose deadline has passed (KEYS[2] queue, KEYS[3] deadlines) by the
/// server's clock, returning that clock in milliseconds and how many went. Run only when somebody
/// queues: an uncontended lock pays for none of it. Scripts call `TIME` before they write: Redis
/// 5 and 6 replicate such a script by its effects only when it asks to (a no-op from Redis 7 on).
const DROP_DEAD: &str = r"
redis.replicate_commands()
local function drop_dead()
    local time = redis.call('TIME')
    local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
    local gone = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
    for _, waiter in ipairs(gone) do
        redis.call('LREM', KEYS[2], 0, waiter)
    end
    if #gone > 0 then
        redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
    end
    return now, #gone
end
";

/// Grants the lock (KEYS[1]) to the token ARGV[2] for ARGV[3] ms when it is free and the waiter
/// ARGV[1] is at the head of the queue or the queue is empty, incrementing the fencing counter
/// KEYS[4] when ARGV[5] is 1: `{1, fencing}`. Else, with ARGV[4] (the waiter timeout, ms) above
/// 0, queues the waiter or renews its place, keeping the queue's keys at least that long:
/// `{0, at_head, pttl}`; a try (ARGV[4] 0) only
/// answers. Wakes the head (publishing ARGV[7] on ARGV[6] .. head) when the lock is free and
/// dropping dead waiters made a new one.
const ACQUIRE: &str = r"
local function grant()
    redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
    if ARGV[5] == '1' then
        return {1, redis.call('INCR', KEYS[4])}
    end
    return {1, 0}
end
local head = redis.call('LINDEX', KEYS[2], 0)
if not head then
    if redis.call('EXISTS', KEYS[1]) == 0 then
        return grant()
    end
    if ARGV[4] == '0' then
        return {0, 0, redis.call('PTTL', KEYS[1])}
    end
end
local now, dropped = drop_dead()
if dropped > 0 then
    head = redis.call('LINDEX', KEYS[2], 0)
end
local free = redis.call('EXISTS', KEYS[1]) == 0
if free and (not head or head == ARGV[1]) then
    if head then
        redis.call('LPOP', KEYS[2])
        redis.call('ZREM', KEYS[3], ARGV[1])
    end
    return grant()
end
if free and dropped > 0 then
    redis.call('PUBLISH', ARGV[6] .. head, ARGV[7])
end
if ARGV[4] == '0' then
    return {0, 0, redis.call('PTTL', KEYS[1])}
end
if redis.call('ZADD', KEYS[3], now + tonumber(ARGV[4]), ARGV[1]) == 1 then
    redis.call('RPUSH', KEYS[2], ARGV[1])
end
if redis.call('PTTL', KEYS[2]) < tonumber(ARGV[4]) then
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    redis.call('PEXPIRE', KEYS[3], ARGV[4])
end
head = redis.call('LINDEX', KEYS[2], 0)
local at_head = 0
if head == ARGV[1] then
    at_head = 1
end
return {0, at_head, redis.call('PTTL', KEYS[1])}";

/// Deletes the lock if it still holds the token ARGV[1] and wakes the head of the queue, the
/// dead dropped first (ARGV[3] on ARGV[2] .. head); 1 when it deleted the lock.
const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
    return 0
end
redis.call('DEL', KEYS[1])
local head = redis.call('LINDEX', KEYS[2], 0)
if head then
    local _, dropped = drop_dead()
    if dropped > 0 then
        head = redis.call('LINDEX', KEYS[2], 0)
    end
end
if head then
    redis.call('PUBLISH', ARGV[2] .. head, ARGV[3])
end
return 1";

/// Takes the waiter ARGV[1] out of the queue; wakes the new head (ARGV[3] on ARGV[2] .. head)
/// when the lock is free, since the one that left may have been the one a release woke.
const WITHDRAW: &str = r"
redis.call('LREM', KEYS[2], 0, ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
drop_dead()
local head = redis.call('LINDEX', KEYS[2], 0)
if head and redis.call('EXISTS', KEYS[1]) == 0 then
    redis.call('PUBLISH', ARGV[2] .. head, ARGV[3])
end
return 1";

/// What one acquiring script answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Answer {
    /// Granted, with the fencing counter's value (`None` without fencing).
    Granted(Option<u64>),
    /// Queued (or, for a try, refused): whether this waiter is at the head of the queue, and
    /// what is left of the holder's TTL (at least a millisecond: Redis answers 0 for a key in
    /// its last one); `None` when the lock is free or never expires (not one of ours).
    Queued {
        at_head: bool,
        ttl_left: Option<Duration>,
    },
}

/// The keys and channel names of one lock key's queue.
#[derive(Clone)]
pub(super) struct Names {
    pub lock: String,
    pub queue: String,
    pub deadlines: String,
    pub fencing: String,
    /// The start of every waiter's channel; the waiter's id completes it.
    pub channels: String,
}

/// `namespace:lock:key`: the lock's key, for the racing lock and the fair queue alike (here, so
/// that the parent module imports it and nothing imports back).
pub(super) fn lock_name(namespace: &str, key: &str) -> String {
    joined(&[namespace, ":lock:", key])
}

/// `namespace:fencing:key`: the key's fencing counter (no TTL), for both as well.
pub(super) fn fencing_name(namespace: &str, key: &str) -> String {
    joined(&[namespace, ":fencing:", key])
}

impl Names {
    /// The names of `key` under `namespace`.
    pub fn of(namespace: &str, key: &str) -> Self {
        Names {
            lock: lock_name(namespace, key),
            queue: joined(&[namespace, ":queue:", key]),
            deadlines: joined(&[namespace, ":queue-deadlines:", key]),
            fencing: fencing_name(namespace, key),
            channels: joined(&[namespace, ":granted:"]),
        }
    }
}

/// A client's side of the fair queue: its id as a waiter, its settings and the scripts.
pub(super) struct FairQueue {
    /// This client's name in every queue, and the end of its channel's name.
    pub waiter: String,
    /// How long a place is kept without renewal.
    pub waiter_timeout: Duration,
    /// A grant increments the key's fencing counter.
    fencing: bool,
    /// Each script call's timeout.
    timeout: Duration,
    acquire: Lua,
    release: Lua,
    withdraw: Lua,
}

impl FairQueue {
    /// The queue side of a client whose waiter id is `waiter`.
    pub fn new(waiter: String, waiter_timeout: Duration, fencing: bool, timeout: Duration) -> Self {
        FairQueue {
            waiter,
            waiter_timeout,
            fencing,
            timeout,
            acquire: Lua::new(&format!("{DROP_DEAD}{ACQUIRE}")),
            release: Lua::new(&format!("{DROP_DEAD}{RELEASE}")),
            withdraw: Lua::new(&format!("{DROP_DEAD}{WITHDRAW}")),
        }
    }

    /// This client's channel, on which a release or a withdrawal wakes it.
    pub fn channel(&self, namespace: &str) -> String {
        format!("{namespace}:granted:{}", self.waiter)
    }

    /// Asks for the lock of `key` (`names`) with `token`: granted, or queued when `queue` (a
    /// wait; a try is refused without queueing).
    pub async fn ask(
        &self,
        conn: &RedisConnection,
        names: &Names,
        (key, token): (&str, &str),
        ttl: Duration,
        queue: bool,
    ) -> Result<Answer, LockError> {
        let (fencing, timeout) = (self.fencing, self.timeout);
        // A try takes a waiter id of its own, never in the queue: it gets a free lock only when
        // nobody waits.
        let waiter = if queue { self.waiter.as_str() } else { token };
        let patience = if queue {
            self.waiter_timeout.as_millis() as u64
        } else {
            0
        };
        let mut call = self.acquire.call(4, 11, 256);
        call.arg(&names.lock)
            .arg(&names.queue)
            .arg(&names.deadlines)
            .arg(&names.fencing)
            .arg(waiter)
            .arg(token)
            .arg(ttl.as_millis() as u64)
            .arg(patience)
            .arg(if fencing { 1 } else { 0 })
            .arg(&names.channels)
            .arg(key);
        let reply: Vec<i64> = timed(BackendKind::Redis, Operation::Acquire, timeout, async {
            self.acquire
                .invoke(conn, &call)
                .await
                .map_err(|e| LockError::server(BackendKind::Redis, Operation::Acquire, e))
        })
        .await?;
        answer(&reply, fencing)
    }

    /// Deletes the lock if `token` still holds it and wakes the next waiter; true when deleted.
    pub async fn release(
        &self,
        conn: &RedisConnection,
        names: &Names,
        key: &str,
        token: &str,
    ) -> Result<bool, LockError> {
        let call = queue_call(&self.release, names, token, key);
        let done: i64 = timed(
            BackendKind::Redis,
            Operation::Release,
            self.timeout,
            async {
                self.release
                    .invoke(conn, &call)
                    .await
                    .map_err(|e| LockError::server(BackendKind::Redis, Operation::Release, e))
            },
        )
        .await?;
        Ok(done == 1)
    }

    /// Takes this client out of `key`'s queue.
    pub async fn withdraw(
        &self,
        conn: &RedisConnection,
        names: &Names,
        key: &str,
    ) -> Result<(), LockError> {
        let call = queue_call(&self.withdraw, names, &self.waiter, key);
        timed(
            BackendKind::Redis,
            Operation::Withdraw,
            self.timeout,
            async {
                self.withdraw
                    .invoke::<i64>(conn, &call)
                    .await
                    .map(|_| ())
                    .map_err(|e| LockError::server(BackendKind::Redis, Operation::Withdraw, e))
            },
        )
        .await
    }
}

/// A call of the release or withdrawal script: the lock, the queue and the deadlines, then the
/// token or waiter, the channels' start and the key each script's comment names.
fn queue_call(script: &Lua, names: &Names, who: &str, key: &str) -> redis::Cmd {
    let mut call = script.call(3, 6, 192);
    call.arg(&names.lock)
        .arg(&names.queue)
        .arg(&names.deadlines)
        .arg(who)
        .arg(&names.channels)
        .arg(key);
    call
}

/// The acquiring script's reply as an [`Answer`].
fn answer(reply: &[i64], fencing: bool) -> Result<Answer, LockError> {
    match *reply {
        [1, counter] => Ok(Answer::Granted(fencing.then_some(counter as u64))),
        [0, at_head, pttl] => Ok(Answer::Queued {
            at_head: at_head == 1,
            // -2: no lock; -1: a lock without expiry (not one of ours).
            ttl_left: (pttl >= 0).then(|| Duration::from_millis(pttl.max(1) as u64)),
        }),
        _ => Err(LockError::server(
            BackendKind::Redis,
            Operation::Acquire,
            format!("unexpected reply from the fair queue's script: {reply:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_read_as_answers() {
        assert_eq!(answer(&[1, 7], true).unwrap(), Answer::Granted(Some(7)));
        assert_eq!(answer(&[1, 0], false).unwrap(), Answer::Granted(None));
        assert_eq!(
            answer(&[0, 1, 1500], true).unwrap(),
            Answer::Queued {
                at_head: true,
                ttl_left: Some(Duration::from_millis(1500))
            }
        );
        // A lock in its last millisecond is about to go, not gone: the head wakes for it (the
        // fault lab's pause caught a head that slept a third of its waiter timeout instead).
        assert_eq!(
            answer(&[0, 1, 0], true).unwrap(),
            Answer::Queued {
                at_head: true,
                ttl_left: Some(Duration::from_millis(1))
            }
        );
        for pttl in [-1, -2] {
            assert_eq!(
                answer(&[0, 0, pttl], true).unwrap(),
                Answer::Queued {
                    at_head: false,
                    ttl_left: None
                }
            );
        }
        assert!(answer(&[2], true).is_err());
    }

    #[test]
    fn names_live_under_the_namespace() {
        let n = Names::of("ns", "billing");
        assert_eq!(n.lock, "ns:lock:billing");
        assert_eq!(n.queue, "ns:queue:billing");
        assert_eq!(n.deadlines, "ns:queue-deadlines:billing");
        assert_eq!(n.fencing, "ns:fencing:billing");
        let q = FairQueue::new(
            "w1".into(),
            Duration::from_secs(5),
            true,
            Duration::from_secs(1),
        );
        assert_eq!(q.channel("ns"), format!("{}w1", n.channels));
    }
}
