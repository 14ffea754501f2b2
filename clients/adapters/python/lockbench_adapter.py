"""The lockbench adapter protocol, Python side (docs/CLIENTS.md).

An adapter is a process that speaks JSON Lines: one request per line on stdin, one reply per line
on stdout, in order, plus events the library pushes (a lost session) at any time. Every message
carries `t`, the machine's CLOCK_MONOTONIC in nanoseconds, the clock the protected resource logs
with. An adapter module defines a class with the methods of `Library` below and calls `serve`.
"""

import json
import sys
import threading
import time
import traceback

PROTOCOL = 1

_out = threading.Lock()


def now_ns():
    """CLOCK_MONOTONIC in nanoseconds (time.monotonic_ns on Linux reads it)."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def send(message):
    """Writes one message, stamped, as one line (from any thread)."""
    message["t"] = now_ns()
    line = json.dumps(message, separators=(",", ":"))
    with _out:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def lost(key, why):
    """Pushes a `lost` event: the library told its user the lock is gone."""
    send({"event": "lost", "key": key, "why": why})


def said(error):
    """The library's own words for an exception: its type and message."""
    return f"{type(error).__name__}: {error}".strip().rstrip(":")


def release_answered(locks, key, refused, words=said):
    """Releases `locks[key]` with the library's own `release()` and answers with what it said.
    `refused` is the library's exception for "not yours any more": an answer, not a failure
    (`words` puts it in the library's words). The lock is forgotten once the library answered,
    so that a release that failed on a connection error can be tried again."""
    lock = locks[key]
    try:
        lock.release()
        del locks[key]
        return {"released": True}
    except refused as e:
        del locks[key]
        return {"released": False, "said": words(e)}


def redis_client(hello, cls=None):
    """The Redis client a library locks through: `redis.Redis.from_url` of the first URL, or,
    when the hello names a `sentinel_master`, the primary that the Sentinels at the URLs name,
    as redis-py's README shows it (`Sentinel([...]).master_for(name)`): its connections ask the
    Sentinels again after a failover."""
    import urllib.parse

    import redis
    import redis.sentinel

    cls = cls or redis.Redis
    timeout = hello["operation_timeout_ms"] / 1000
    master = hello.get("sentinel_master")
    if not master:
        return cls.from_url(hello["urls"][0], socket_timeout=timeout)
    sentinels = []
    for url in hello["urls"]:
        parsed = urllib.parse.urlparse(url)
        sentinels.append((parsed.hostname, parsed.port or 26379))
    first = urllib.parse.urlparse(hello["urls"][0])
    sentinel = redis.sentinel.Sentinel(
        sentinels,
        socket_timeout=timeout,
        sentinel_kwargs={"socket_timeout": timeout, "password": first.password},
    )
    return sentinel.master_for(master, redis_class=cls, socket_timeout=timeout, password=first.password)


class Library:
    """What an adapter implements. Each method calls the library as its README tells users to,
    and returns its answer; it never works around the library's behaviour."""

    def describe(self):
        """{'library', 'version', 'backend', 'renewal', 'fencing', 'notifies_loss'}."""
        raise NotImplementedError

    def acquire(self, key, ttl_ms, wait_ms):
        """{'held': bool, 'token': str|None, 'fencing_token': int|None, 'validity_ms': int|None}."""
        raise NotImplementedError

    def renew(self, key, ttl_ms):
        """{'held': bool, 'said': str|None}."""
        raise NotImplementedError

    def release(self, key):
        """{'released': bool, 'said': str|None}."""
        raise NotImplementedError

    def held(self, key):
        """{'held': bool}: what the library says when asked whether it still holds the lock."""
        raise NotImplementedError

    def close(self):
        pass


def serve(open_library):
    """Reads the hello, opens the library with it (`open_library(hello)`), then answers requests
    until stdin closes or a `bye` arrives."""
    library = None
    while True:
        # readline, not `for line in sys.stdin`: iteration reads ahead and would sit on a request
        # until more input arrives.
        line = sys.stdin.buffer.readline()
        if not line:
            break
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except ValueError as e:
            send({"ok": False, "error": f"not JSON: {e}"})
            continue
        op, rid = request.get("op"), request.get("id")
        try:
            if op == "hello":
                if request.get("protocol") != PROTOCOL:
                    raise ValueError(f"protocol {request.get('protocol')!r}; this adapter speaks {PROTOCOL}")
                opened = open_library(request)
                reply = dict(opened.describe(), protocol=PROTOCOL)
                library = opened
            elif library is None:
                raise ValueError(f"{op!r} before hello")
            elif op == "acquire":
                reply = library.acquire(request["key"], int(request["ttl_ms"]), int(request["wait_ms"]))
            elif op == "renew":
                reply = library.renew(request["key"], int(request["ttl_ms"]))
            elif op == "release":
                reply = library.release(request["key"])
            elif op == "held":
                reply = library.held(request["key"])
            elif op == "bye":
                send({"id": rid, "ok": True})
                break
            else:
                raise ValueError(f"unknown op {op!r}")
            send(dict(reply, id=rid, ok=True))
        except Exception as e:  # the library's failure is an answer, sent back in one line
            traceback.print_exc(file=sys.stderr)
            send({"id": rid, "ok": False, "error": said(e)})
    if library is not None:
        library.close()
