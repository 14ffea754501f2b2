"""kazoo's `Lock` (kazoo.recipe.lock.Lock), as its docs show it: `zk.Lock(path, identifier)`.

The lock lives as long as the client's ZooKeeper session: its TTL is the session timeout, asked
for at connect (`KazooClient(timeout=...)`) and renewed by kazoo's own connection thread. kazoo
tells its user of a lost session through a state listener (`KazooState.LOST`), which this adapter
forwards as a `lost` event; `SUSPENDED` (connection lost, session maybe alive) is forwarded as
`suspended`. The lock gives no fencing token.
"""

import logging

import kazoo
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import LockTimeout
from kazoo.loggingsupport import BLATHER

from lockbench_adapter import Library, send, serve


class Negotiated(logging.Handler):
    """The session timeout the server granted. kazoo keeps only the one it asked for
    (`_session_timeout`); the granted one appears in its own log line "Session created ...
    negotiated session timeout: N" (ms), at its BLATHER level, which this handler reads."""

    def __init__(self):
        super().__init__(level=BLATHER)
        self.timeout_ms = None

    def emit(self, record):
        if str(record.msg).startswith("Session created") and len(record.args) >= 3:
            self.timeout_ms = int(record.args[2])


class Kazoo(Library):
    def __init__(self, hello):
        hosts = ",".join(u.removeprefix("zk://") for u in hello["urls"])
        self.negotiated = Negotiated()
        logger = logging.getLogger("lockbench.kazoo")
        logger.addHandler(self.negotiated)
        logger.setLevel(BLATHER)
        self.zk = KazooClient(hosts=hosts, timeout=hello["session_timeout_ms"] / 1000, logger=logger)
        self.zk.add_listener(self.state)
        self.zk.start(timeout=hello["connect_timeout_ms"] / 1000)
        # Only the session's creation was wanted: a log record per packet costs on every call.
        logger.setLevel(logging.WARNING)
        self.asked_ms = hello["session_timeout_ms"]
        self.namespace = hello["namespace"]
        self.locks = {}
        self.lost = set()

    def state(self, state):
        # Called on kazoo's own thread: pushed as an event, whatever lock it concerns.
        if state == KazooState.LOST:
            # kazoo opens a new session by itself and keeps `is_acquired` set: the keys held
            # when the session was lost stay lost.
            self.lost.update(self.locks)
            for key in list(self.locks):
                send({"event": "lost", "key": key, "why": "KazooState.LOST"})
        elif state == KazooState.SUSPENDED:
            for key in list(self.locks):
                send({"event": "suspended", "key": key, "why": "KazooState.SUSPENDED"})

    def describe(self):
        return {
            "library": "kazoo",
            "version": kazoo.version.__version__,
            "backend": "zookeeper",
            "renewal": "automatic",
            "fencing": False,
            "notifies_loss": True,
        }

    def acquire(self, key, ttl_ms, wait_ms):
        # The layout of lockbench's own ZooKeeper locks, so that its cleanup of the namespace
        # removes the folders kazoo leaves behind.
        lock = self.zk.Lock(f"/{self.namespace}/locks/{key}", "lockbench")
        try:
            held = lock.acquire(blocking=wait_ms > 0, timeout=wait_ms / 1000 if wait_ms > 0 else None)
        except LockTimeout:
            # kazoo's "not within the wait": an answer, not a failure.
            held = False
        if not held:
            return {"held": False}
        self.locks[key] = lock
        self.lost.discard(key)
        return {
            "held": True,
            "token": lock.node,
            "fencing_token": None,
            # The lock lives as long as the session: the timeout the server granted at connect
            # (it clamps what was asked to 2-20 ticks).
            "validity_ms": self.negotiated.timeout_ms or self.asked_ms,
        }

    def renew(self, key, ttl_ms):
        # The session is kept alive by kazoo itself; nothing to extend. Asked, kazoo answers with
        # its own view of the lock.
        return self.held(key)

    def release(self, key):
        # Forgotten only once released, so that a release that failed can be tried again.
        released = bool(self.locks[key].release())
        del self.locks[key]
        return {"released": released}

    def held(self, key):
        lock = self.locks.get(key)
        return {
            "held": lock is not None
            and key not in self.lost
            and lock.is_acquired
            and self.zk.state == KazooState.CONNECTED
        }

    def close(self):
        self.zk.stop()
        self.zk.close()


if __name__ == "__main__":
    serve(Kazoo)
