"""tooz's Postgres lock (tooz.drivers.pgsql, OpenStack's coordination library), as its docs show
it: `coordination.get_coordinator("postgresql://...", member_id)`, `start()`, then
`get_lock(name)` and `acquire(blocking=...)` / `release()`.

The lock is a session-level advisory lock, `pg_advisory_lock(a, b)`, on a connection of its own
that tooz opens at the acquire and closes at the release: it lives as long as that connection,
with no TTL, no renewal, no fencing token and no notification of a lost lock. What tooz does that
this adapter reports as it is:

- the advisory key is the first two bytes of the MD5 of the lock's name, so two names share a
  lock with probability 1/65,536;
- a wait (`blocking=seconds`) that runs out raises tenacity's `RetryError` rather than returning
  False: the adapter answers `held: false` with tooz's words;
- `release()` ignores what `pg_advisory_unlock` answered and returns True;
- `acquired` is the library's own flag: it is not asked of the server.
"""

import importlib.metadata
import os
import warnings

import tenacity
from tooz import coordination

from lockbench_adapter import Library, said, serve


class ToozPg(Library):
    def __init__(self, hello):
        # tooz names the scheme `postgresql`; lockbench's config may say `postgres`.
        _, rest = hello["urls"][0].split("://", 1)
        url = f"postgresql://{rest}"
        member = f"lockbench-{os.getpid()}".encode()
        with warnings.catch_warnings():
            # tooz 9 deprecates its Postgres driver (a DeprecationWarning at construction).
            warnings.simplefilter("ignore", DeprecationWarning)
            self.coordinator = coordination.get_coordinator(url, member)
        self.coordinator.start()
        self.namespace = hello["namespace"]
        self.locks = {}

    def describe(self):
        return {
            "library": "tooz",
            "version": importlib.metadata.version("tooz"),
            "backend": "pg-session",
            "renewal": "none",
            "fencing": False,
            "notifies_loss": False,
        }

    def acquire(self, key, ttl_ms, wait_ms):
        lock = self.coordinator.get_lock(f"{self.namespace}:client:{key}".encode())
        try:
            held = lock.acquire(blocking=wait_ms / 1000 if wait_ms > 0 else False)
        except tenacity.RetryError as e:
            return {"held": False, "said": said(e)}
        if not held:
            return {"held": False}
        self.locks[key] = lock
        return {"held": True, "token": None, "fencing_token": None, "validity_ms": None}

    def renew(self, key, ttl_ms):
        # Nothing to extend: lockbench asks `held` instead.
        return self.held(key)

    def release(self, key):
        lock = self.locks.pop(key)
        return {"released": bool(lock.release())}

    def held(self, key):
        lock = self.locks.get(key)
        return {"held": lock is not None and lock.acquired}

    def close(self):
        for lock in self.locks.values():
            try:
                lock.release()
            except Exception:
                pass
        self.coordinator.stop()


if __name__ == "__main__":
    serve(ToozPg)
