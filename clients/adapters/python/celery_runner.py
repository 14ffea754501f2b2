"""A Celery worker and producer for the fault lab's runner cells (docs/FAULTS.md, "runner").

    celery_runner.py worker NAME    runs one worker (prefork, concurrency 1) until SIGTERM; prints
                                    `ready` once it consumes
    celery_runner.py enqueue TRIAL SECONDS
                                    sends one task that runs SECONDS and returns

The lab passes its settings in the environment: LB_BROKER (the lab's private redis-server),
LB_RESOURCE and LB_SCHEMA (the protected resource's Postgres and the run's schema), and
LB_VISIBILITY_TIMEOUT (seconds), and for the stall cells LB_AGAIN_SECONDS (the task's first
execution runs SECONDS, a later one LB_AGAIN_SECONDS). The task is acknowledged late (`acks_late`), as the jobs that must
not be lost are, so a task that outlives the broker's visibility_timeout is delivered again while
the first worker still runs it (celery #5935, kombu #337).

Every execution writes to the resource as a locked job does: a grant when it starts, a write every
half second, its end; the lab counts the executions from that log.
"""

import os
import sys
import threading
import time

import psycopg2
from celery import Celery
from celery.signals import worker_ready

# kombu sweeps the unacknowledged messages every unacked_restore_interval x
# unacked_restore_throttle seconds (10 x 10 by default): a delivery again comes up to 100 s after
# the visibility_timeout. The lab sweeps every second, so that a trial lasts seconds; the model
# counts the timeout alone.
app = Celery("lockbench_runner", broker=os.environ.get("LB_BROKER", "redis://127.0.0.1:6379/0"))
app.conf.update(
    task_acks_late=True,
    worker_prefetch_multiplier=1,
    worker_hijack_root_logger=False,
    worker_redirect_stdouts=False,
    broker_connection_retry_on_startup=False,
    broker_transport_options={
        "visibility_timeout": float(os.environ.get("LB_VISIBILITY_TIMEOUT", "3600")),
        "unacked_restore_interval": 1,
        "unacked_restore_throttle": 1,
    },
)

_executions = 0
_count = threading.Lock()


def now_ns():
    """CLOCK_MONOTONIC in nanoseconds: the clock the protected resource logs with."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


class Resource:
    """One connection to the run's log, for one execution."""

    def __init__(self, trial, worker):
        self.conn = psycopg2.connect(os.environ["LB_RESOURCE"], connect_timeout=10)
        self.conn.autocommit = True
        self.table = os.environ["LB_SCHEMA"] + ".log"
        self.trial = trial
        self.worker = worker

    def started_before(self):
        """True when an execution of this trial has started before (the log has its grant)."""
        with self.conn.cursor() as cur:
            cur.execute(
                f"SELECT EXISTS (SELECT 1 FROM {self.table} WHERE trial = %s AND event = 'grant')",
                (self.trial,),
            )
            return cur.fetchone()[0]

    def log(self, event, detail=""):
        with self.conn.cursor() as cur:
            cur.execute(
                f"INSERT INTO {self.table} (trial, worker, event, t_ns, detail) VALUES (%s, %s, %s, %s, %s)",
                (self.trial, self.worker, event, now_ns(), detail),
            )

    def close(self):
        self.conn.close()


def task_lock(resource, trial):
    """The job's own lock, taken inside the task when LB_TASK_LOCK says so: `redis:MS` (SET NX PX
    on the broker's Redis, a lease of MS ms released by a token-checked delete) or `pg` (a session
    advisory lock on the execution's own connection). Returns the release, or None when another
    execution holds it."""
    how = os.environ.get("LB_TASK_LOCK", "")
    if how == "":
        return lambda: None
    if how == "pg":
        with resource.conn.cursor() as cur:
            cur.execute("SELECT pg_try_advisory_lock(hashtext(%s))", (trial,))
            if not cur.fetchone()[0]:
                return None

        def unlock():
            with resource.conn.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(hashtext(%s))", (trial,))

        return unlock
    import uuid

    import redis

    client = redis.Redis.from_url(os.environ["LB_BROKER"], socket_timeout=5)
    key = f"lockbench-task-lock:{trial}"
    token = uuid.uuid4().hex
    if not client.set(key, token, nx=True, px=int(how.removeprefix("redis:"))):
        client.close()
        return None

    def release():
        client.eval(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
            1, key, token,
        )
        client.close()

    return release


@app.task(name="lockbench.job")
def job(trial, seconds):
    global _executions
    with _count:
        _executions += 1
        n = _executions
    resource = Resource(trial, f"{os.environ.get('LB_WORKER', 'celery')}#{n}")
    try:
        release = task_lock(resource, trial)
        if release is None:
            resource.log("skipped", "the task's lock is held")
            return
        # The stall cells: `seconds` is the first execution's stall; a later one runs
        # LB_AGAIN_SECONDS.
        again = os.environ.get("LB_AGAIN_SECONDS", "")
        if again and resource.started_before():
            seconds = float(again)
        resource.log("grant")
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            time.sleep(min(0.5, max(0.0, end - time.monotonic())))
            resource.log("write")
        release()
        resource.log("end", "released")
    finally:
        resource.close()


@worker_ready.connect
def _ready(**_):
    print("ready", flush=True)


def main(argv):
    if len(argv) >= 2 and argv[0] == "worker":
        os.environ["LB_WORKER"] = argv[1]
        app.worker_main(
            ["worker", "--concurrency", "1", "--pool", "prefork", "--loglevel", "WARNING",
             "--hostname", f"{argv[1]}@lockbench", "--without-gossip", "--without-mingle",
             "--without-heartbeat"]
        )
        return 0
    if len(argv) == 3 and argv[0] == "enqueue":
        job.apply_async(args=(argv[1], float(argv[2])))
        print("enqueued", flush=True)
        return 0
    print("usage: celery_runner.py worker NAME | enqueue TRIAL SECONDS", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
