"""One node of a cron-style scheduler for the fault lab's slot cells (docs/FAULTS.md, "slot").

    cron_node.py worker NAME

Fires the slots LB_FIRST_SLOT + k x LB_PERIOD (k < LB_SLOTS; epoch seconds) when its clock
reaches them: its own wall clock (`time.time()`, which the lab shifts with its wall-clock shim to
put this node's clock behind the other's), or with LB_REMEDY=db-clock the database's
(`clock_timestamp()` of the resource's Postgres). Before running the job it takes the job's
lock as ShedLock does on Redis: one key named after the job, not the slot (SET NX PX of
LB_LOCK_AT_MOST_FOR seconds on LB_BROKER), and gives it back at the end of the run:

    plain       deleted at once (token-checked)
    hold        kept until LB_HOLD seconds after the run started (ShedLock's lockAtLeastFor: the
                rest of the hold set as the key's expiry, measured on this node's monotonic clock)
    db-clock    as plain, the slot fired by the database's clock
    completion  as plain, and the run first inserts (job, slot) into the run's completion table
                (`LB_SCHEMA.completion`): a slot already recorded is skipped

Every run writes to the protected resource as a locked job does (a grant, writes, its end) under
the trial `LB_TRIAL/slot-k`; a start that finds the lock held or the slot recorded logs
`skipped`. Exits after its last slot.
"""

import os
import sys
import time
import uuid

import psycopg2
import redis

JOB = "lockbench-slot-job"


def now_ns():
    """CLOCK_MONOTONIC in nanoseconds: the clock the protected resource logs with."""
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def setting(name):
    value = os.environ.get(name, "")
    if value == "":
        print(f"cron_node.py: {name} is not set (the fault lab sets it)", file=sys.stderr)
        sys.exit(2)
    return value


class Node:
    def __init__(self, name):
        self.name = name
        self.period = float(setting("LB_PERIOD"))
        self.first = float(setting("LB_FIRST_SLOT"))
        self.slots = int(setting("LB_SLOTS"))
        self.job = float(setting("LB_JOB"))
        self.remedy = setting("LB_REMEDY")
        self.hold = float(os.environ.get("LB_HOLD", "0") or "0")
        self.at_most = float(setting("LB_LOCK_AT_MOST_FOR"))
        self.trial = setting("LB_TRIAL")
        self.schema = setting("LB_SCHEMA")
        self.redis = redis.Redis.from_url(setting("LB_BROKER"), socket_timeout=5)
        self.db = psycopg2.connect(setting("LB_RESOURCE"), connect_timeout=10)
        self.db.autocommit = True

    def log(self, trial, worker, event, detail=""):
        with self.db.cursor() as cur:
            cur.execute(
                f"INSERT INTO {self.schema}.log (trial, worker, event, t_ns, detail) VALUES (%s, %s, %s, %s, %s)",
                (trial, worker, event, now_ns(), detail),
            )

    def clock(self):
        """The time this node fires by: its own wall clock, or the database's."""
        if self.remedy == "db-clock":
            with self.db.cursor() as cur:
                cur.execute("SELECT extract(epoch FROM clock_timestamp())::float8")
                return cur.fetchone()[0]
        return time.time()

    def wait_until(self, t):
        while True:
            left = t - self.clock()
            if left <= 0:
                return
            time.sleep(min(left, 0.02 if self.remedy == "db-clock" else 0.05))

    def recorded_first(self, k):
        """Inserts the slot's completion record; false when another node has."""
        with self.db.cursor() as cur:
            cur.execute(
                f"INSERT INTO {self.schema}.completion (job, slot) VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING 1",
                (JOB, k),
            )
            return cur.fetchone() is not None

    def fire(self, k):
        trial = f"{self.trial}/slot-{k}"
        worker = f"{self.name}#{k}"
        token = uuid.uuid4().hex
        if not self.redis.set(JOB, token, nx=True, px=int(self.at_most * 1000)):
            self.log(trial, worker, "skipped", "the job's lock is held")
            return
        started = time.monotonic()
        try:
            if self.remedy == "completion" and not self.recorded_first(k):
                self.log(trial, worker, "skipped", "the slot's completion record exists")
                return
            self.log(trial, worker, "grant")
            end = started + self.job
            while time.monotonic() < end:
                time.sleep(min(0.25, max(0.0, end - time.monotonic())))
                self.log(trial, worker, "write")
            self.log(trial, worker, "end", "released")
        finally:
            self.give_back(token, started)

    def give_back(self, token, started):
        if self.remedy == "hold":
            left_ms = int((started + self.hold - time.monotonic()) * 1000)
            if left_ms > 0:
                self.redis.eval(
                    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end",
                    1, JOB, token, left_ms,
                )
                return
        self.redis.eval(
            "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
            1, JOB, token,
        )

    def run(self):
        print("ready", flush=True)
        for k in range(self.slots):
            self.wait_until(self.first + k * self.period)
            self.fire(k)
        return 0


def main(argv):
    if len(argv) != 2 or argv[0] != "worker":
        print("usage: cron_node.py worker NAME", file=sys.stderr)
        return 2
    return Node(argv[1]).run()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
