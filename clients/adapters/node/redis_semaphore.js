// redis-semaphore's `Mutex` (Node) over ioredis, as its README's "Example with lost lock
// handling" shows it: `new Mutex(redisClient, key, { lockTimeout, onLockLost })`, `acquire()`,
// work while `mutex.isAcquired`, `release()`.
//
// The mutex refreshes itself every 0.8 x lockTimeout (its default `refreshInterval`) while the
// process runs; a refresh that finds the key gone or another's calls `onLockLost`, which goes out
// as a `lost` event (the library's default handler throws it unhandled instead). `release()`
// returns nothing, whatever it deleted: "if lock is no longer belongs to this mutex, .release()
// will have no effect", so the adapter can only answer "released". No fencing token; the
// identifier (a random UUID) is the token.
"use strict";

const { library, version, lost, said, serve } = require("./lockbench_adapter");

const Redis = library("ioredis");
const { Mutex } = library("redis-semaphore");
const VERSION = version("redis-semaphore");

class RedisSemaphore {
  static async open(hello) {
    const options = {
      connectTimeout: hello.connect_timeout_ms,
      commandTimeout: hello.operation_timeout_ms,
      // Every key under the lab's namespace (the library's own names start with `mutex:`).
      keyPrefix: `${hello.namespace}:client:`,
      lazyConnect: true,
    };
    // Behind Sentinel, ioredis asks the Sentinels for the primary (its README's `sentinels`
    // and `name`), and again after a failover.
    const redis = hello.sentinel_master
      ? new Redis({
          ...options,
          sentinels: hello.urls.map((u) => {
            const url = new URL(u);
            return { host: url.hostname, port: Number(url.port || 26379) };
          }),
          name: hello.sentinel_master,
          // The URLs' password goes to the Sentinels and to the primary alike, as lockbench's
          // own client sends it.
          password: new URL(hello.urls[0]).password || undefined,
          sentinelPassword: new URL(hello.urls[0]).password || undefined,
        })
      : new Redis(hello.urls[0], options);
    await redis.connect();
    return new RedisSemaphore(redis, hello.operation_timeout_ms);
  }

  constructor(redis, operationTimeoutMs) {
    this.redis = redis;
    this.operationTimeoutMs = operationTimeoutMs;
    this.locks = new Map();
  }

  describe() {
    return {
      library: "redis-semaphore",
      version: VERSION,
      backend: "redis",
      renewal: "automatic",
      fencing: false,
      notifies_loss: true,
    };
  }

  async acquire(key, ttlMs, waitMs) {
    const mutex = new Mutex(this.redis, key, {
      lockTimeout: ttlMs,
      // No wait is one attempt (an acquireTimeout of 0 makes none at all).
      acquireTimeout: waitMs > 0 ? waitMs : this.operationTimeoutMs,
      acquireAttemptsLimit: waitMs > 0 ? Number.POSITIVE_INFINITY : 1,
      onLockLost: (e) => lost(key, said(e)),
    });
    if (!(await mutex.tryAcquire())) return { held: false };
    this.locks.set(key, mutex);
    return { held: true, token: mutex.identifier, fencing_token: null, validity_ms: null };
  }

  async renew(key) {
    // The mutex refreshes by itself; asked, the adapter answers with its own view.
    return this.held(key);
  }

  async release(key) {
    const mutex = this.locks.get(key);
    if (!mutex) throw new Error(`release of ${key}, which this adapter does not hold`);
    this.locks.delete(key);
    await mutex.release();
    return { released: true };
  }

  async held(key) {
    const mutex = this.locks.get(key);
    return { held: mutex !== undefined && mutex.isAcquired };
  }

  async close() {
    for (const mutex of this.locks.values()) mutex.stopRefresh();
    await this.redis.quit().catch(() => {});
  }
}

serve((hello) => RedisSemaphore.open(hello));
