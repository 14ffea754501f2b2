// What every Node runner of the fault lab's runner cells runs as its job (docs/FAULTS.md,
// "runner"): it writes to the protected resource as a locked job does, a grant when it starts,
// writes while it works, its end, each stamped with CLOCK_MONOTONIC (process.hrtime.bigint) in
// the run's log, from which the lab counts the executions.
"use strict";

const path = require("path");

// The libraries scripts/clients.sh installed (npm ci of this folder's lock file).
const MODULES = path.resolve(__dirname, "../../../target/clients/node/node_modules");

function library(name) {
  return require(require.resolve(name, { paths: [MODULES] }));
}

function setting(name) {
  const value = process.env[name];
  if (value === undefined || value === "") {
    console.error(`${path.basename(process.argv[1])}: ${name} is not set (the fault lab sets it)`);
    process.exit(2);
  }
  return value;
}

function seconds(name) {
  const value = Number(setting(name));
  if (!(value > 0)) {
    console.error(`${path.basename(process.argv[1])}: ${name} must be a positive number of seconds`);
    process.exit(2);
  }
  return value;
}

// One execution's connection to the run's log.
class Resource {
  constructor(trial, worker) {
    const { Client } = library("pg");
    this.client = new Client({ connectionString: setting("LB_RESOURCE"), connectionTimeoutMillis: 10000 });
    this.table = `${setting("LB_SCHEMA")}.log`;
    this.trial = trial;
    this.worker = worker;
  }

  async open() {
    await this.client.connect();
  }

  // True when an execution of this trial has started before (the log has its grant).
  async startedBefore() {
    const { rows } = await this.client.query(
      `SELECT EXISTS (SELECT 1 FROM ${this.table} WHERE trial = $1 AND event = 'grant') AS yes`,
      [this.trial],
    );
    return rows[0].yes;
  }

  async log(event, detail = "") {
    const t = process.hrtime.bigint().toString();
    await this.client.query(
      `INSERT INTO ${this.table} (trial, worker, event, t_ns, detail) VALUES ($1, $2, $3, $4, $5)`,
      [this.trial, this.worker, event, t, detail],
    );
  }

  async close() {
    await this.client.end().catch(() => {});
  }
}

let executions = 0;

// The job's own lock, taken inside the task when LB_TASK_LOCK says so: `redis:MS` (SET NX PX on
// the broker's Redis, a lease of MS ms released by a token-checked delete), `pg` (a session
// advisory lock on the execution's own connection to the resource's Postgres, no lease). Returns
// the release, or null when another execution holds it.
async function taskLock(resource, trial) {
  const how = process.env.LB_TASK_LOCK || "";
  if (how === "") return async () => {};
  if (how === "pg") {
    const { rows } = await resource.client.query("SELECT pg_try_advisory_lock(hashtext($1)) AS ok", [trial]);
    if (!rows[0].ok) return null;
    return async () => {
      await resource.client.query("SELECT pg_advisory_unlock(hashtext($1))", [trial]);
    };
  }
  const ms = Number(how.replace(/^redis:/, ""));
  const Redis = library("ioredis");
  const redis = new Redis(setting("LB_BROKER"), { maxRetriesPerRequest: 1 });
  const key = `lockbench-task-lock:${trial}`;
  const token = `${process.pid}-${executions}-${Math.random()}`;
  const ok = await redis.set(key, token, "PX", ms, "NX");
  if (ok !== "OK") {
    redis.disconnect();
    return null;
  }
  return async () => {
    await redis.eval(
      "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end",
      1, key, token,
    );
    redis.disconnect();
  };
}

// Runs one execution of `trial` as `worker`'s next: `busy` holds the event loop for `seconds`
// (a CPU-bound stretch: nothing else of the process runs, its lock renewals included), otherwise
// it sleeps, writing every half second. With a task lock another execution holds, it skips.
// With LB_AGAIN_SECONDS set (the stall cells), `seconds` is the first execution's stall and an
// execution that finds the trial started before runs LB_AGAIN_SECONDS instead.
async function execute(worker, trial, secondsLong, busy) {
  executions += 1;
  const resource = new Resource(trial, `${worker}#${executions}`);
  await resource.open();
  try {
    const release = await taskLock(resource, trial);
    if (release === null) {
      await resource.log("skipped", "the task's lock is held");
      return;
    }
    const again = process.env.LB_AGAIN_SECONDS || "";
    if (again !== "" && (await resource.startedBefore())) secondsLong = Number(again);
    await resource.log("grant");
    const end = Date.now() + secondsLong * 1000;
    if (busy) {
      while (Date.now() < end) {
        // CPU-bound: the event loop turns only when the stretch is over.
      }
      await resource.log("write");
    } else {
      while (Date.now() < end) {
        await new Promise((r) => setTimeout(r, Math.min(500, Math.max(0, end - Date.now()))));
        await resource.log("write");
      }
    }
    await release();
    await resource.log("end", "released");
  } finally {
    await resource.close();
  }
}

// Stops `close` on SIGTERM or SIGINT, then exits.
function closeOnSignal(close) {
  let closing = false;
  const stop = () => {
    if (closing) return;
    closing = true;
    Promise.resolve(close())
      .catch((e) => console.error(`closing: ${e.message}`))
      .finally(() => process.exit(0));
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}

module.exports = { library, setting, seconds, execute, closeOnSignal };
