"""pottery's `Redlock` (pottery.Redlock), as its README shows it: `Redlock(key=..., masters={...},
auto_release_time=...)` over the independent Redis masters.

No fencing token and no automatic renewal: `extend()` is the user's to call, and it refuses
after `num_extensions` extensions (3 by default: `TooManyExtensions`), which this adapter
leaves at its default, as a job that follows the README does. `locked()` says how long the lease
has left (the validity the adapter reports at acquire). No notification of a lost lock.
"""

from importlib.metadata import version

import redis
from pottery import Redlock
from pottery.exceptions import PrimitiveError

from lockbench_adapter import Library, release_answered, serve


class Pottery(Library):
    def __init__(self, hello):
        timeout = hello["operation_timeout_ms"] / 1000
        self.masters = {redis.Redis.from_url(u, socket_timeout=timeout) for u in hello["urls"]}
        for master in self.masters:
            master.ping()
        self.namespace = hello["namespace"]
        self.locks = {}

    def describe(self):
        return {
            "library": "pottery",
            "version": version("pottery"),
            "backend": "redlock",
            "renewal": "manual",
            "fencing": False,
            "notifies_loss": False,
        }

    def acquire(self, key, ttl_ms, wait_ms):
        lock = Redlock(key=f"{self.namespace}:client:{key}", masters=self.masters,
                       auto_release_time=ttl_ms / 1000)
        if wait_ms > 0:
            held = lock.acquire(blocking=True, timeout=wait_ms / 1000)
        else:
            held = lock.acquire(blocking=False)
        if not held:
            return {"held": False}
        self.locks[key] = lock
        return {"held": True, "token": None, "fencing_token": None,
                "validity_ms": int(lock.locked() * 1000)}

    def renew(self, key, ttl_ms):
        # pottery extends to its auto_release_time, set at construction. A refusal is said by
        # its class and key (the exception's text would print every master's connection pool).
        try:
            self.locks[key].extend()
            return {"held": True}
        except PrimitiveError as e:
            return {"held": False, "said": f"{type(e).__name__}: {e.key}"}

    def release(self, key):
        return release_answered(self.locks, key, PrimitiveError,
                                lambda e: f"{type(e).__name__}: {e.key}")

    def held(self, key):
        lock = self.locks.get(key)
        return {"held": lock is not None and lock.locked() > 0}

    def close(self):
        for master in self.masters:
            master.close()


if __name__ == "__main__":
    serve(Pottery)
