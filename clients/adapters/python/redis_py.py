"""redis-py's `Lock` (redis.lock.Lock), as its README shows it: `r.lock(name, timeout=...)`.

No fencing token, no automatic renewal (`extend` is the user's to call), no notification of a
lost lock: `owned()` asks Redis whether the token is still there.
"""

import redis
from redis.exceptions import LockError

from lockbench_adapter import Library, redis_client, release_answered, said, serve


class RedisPy(Library):
    def __init__(self, hello):
        self.redis = redis_client(hello)
        self.redis.ping()
        self.namespace = hello["namespace"]
        self.locks = {}

    def describe(self):
        return {
            "library": "redis-py",
            "version": redis.__version__,
            "backend": "redis",
            "renewal": "manual",
            "fencing": False,
            "notifies_loss": False,
        }

    def acquire(self, key, ttl_ms, wait_ms):
        lock = self.redis.lock(f"{self.namespace}:client:{key}", timeout=ttl_ms / 1000, thread_local=False)
        if wait_ms > 0:
            held = lock.acquire(blocking=True, blocking_timeout=wait_ms / 1000)
        else:
            held = lock.acquire(blocking=False)
        if not held:
            return {"held": False}
        self.locks[key] = lock
        return {"held": True, "token": lock.local.token.decode(), "fencing_token": None, "validity_ms": None}

    def renew(self, key, ttl_ms):
        try:
            self.locks[key].extend(ttl_ms / 1000, replace_ttl=True)
            return {"held": True}
        except LockError as e:
            return {"held": False, "said": said(e)}

    def release(self, key):
        return release_answered(self.locks, key, LockError)

    def held(self, key):
        lock = self.locks.get(key)
        return {"held": lock is not None and lock.owned()}

    def close(self):
        self.redis.close()


if __name__ == "__main__":
    serve(RedisPy)
