"""python-redis-lock's `Lock` (redis_lock.Lock), as its README shows it:
`redis_lock.Lock(conn, name, expire=..., auto_renewal=True)`.

Automatic renewal: a thread of the library's extends the lock every 2/3 of `expire`. No fencing
token and no notification of a lost lock: when the renewal thread finds the lock gone, its
`extend` raises `NotAcquired` in that thread, which ends it, and nobody is told. The holder
learns it only by asking (`get_owner_id()`) or at release (`NotAcquired`). The library counts
`expire` and the acquire's `timeout` in whole seconds: the adapter rounds both up.
"""

import math
from importlib.metadata import version

import redis
import redis_lock

from lockbench_adapter import Library, redis_client, release_answered, serve


def whole_seconds(ms):
    return max(1, math.ceil(ms / 1000))


class PythonRedisLock(Library):
    def __init__(self, hello):
        self.redis = redis_client(hello, redis.StrictRedis)
        self.redis.ping()
        self.namespace = hello["namespace"]
        self.locks = {}

    def describe(self):
        return {
            "library": "python-redis-lock",
            "version": version("python-redis-lock"),
            "backend": "redis",
            "renewal": "automatic",
            "fencing": False,
            "notifies_loss": False,
        }

    def acquire(self, key, ttl_ms, wait_ms):
        # The key is `lock:` + name (the library's prefix), its signal list `lock-signal:` + name.
        lock = redis_lock.Lock(self.redis, f"{self.namespace}:client:{key}", expire=whole_seconds(ttl_ms),
                               auto_renewal=True)
        if wait_ms > 0:
            held = lock.acquire(blocking=True, timeout=whole_seconds(wait_ms))
        else:
            held = lock.acquire(blocking=False)
        if not held:
            return {"held": False}
        self.locks[key] = lock
        return {"held": True, "token": lock.id, "fencing_token": None,
                "validity_ms": whole_seconds(ttl_ms) * 1000}

    def renew(self, key, ttl_ms):
        # The library's thread renews; asked, the adapter answers with the owner Redis names.
        return self.held(key)

    def release(self, key):
        return release_answered(self.locks, key, redis_lock.NotAcquired)

    def held(self, key):
        lock = self.locks.get(key)
        return {"held": lock is not None and lock.get_owner_id() == lock.id}

    def close(self):
        self.redis.close()


if __name__ == "__main__":
    serve(PythonRedisLock)
