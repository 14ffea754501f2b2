// A pg-boss worker and producer for the fault lab's runner cells (docs/FAULTS.md, "runner").
//
//   pgboss_runner.js worker NAME            one worker (one job at a time) until SIGTERM; prints
//                                           `ready` once it polls
//   pgboss_runner.js enqueue TRIAL SECONDS  sends one job that sleeps SECONDS, writing
//
// The lab passes its settings in the environment: LB_BROKER (a Postgres URL), LB_BOSS_SCHEMA
// (pg-boss's own schema, one per run), LB_RESOURCE and LB_SCHEMA (the protected resource),
// LB_EXPIRE_IN (seconds), and for the stall cells LB_AGAIN_SECONDS (runner_job.js). A job active past expireInSeconds is failed by pg-boss's maintenance
// and retried (retryLimit) while its first run goes on (pg-boss #436). Maintenance runs every
// 120 s by default; the lab runs it every second, so that a trial lasts seconds.
"use strict";

const { library, setting, seconds, execute, closeOnSignal } = require("./runner_job");

const QUEUE = "lockbench-runner";

async function boss() {
  const PgBoss = library("pg-boss");
  const b = new PgBoss({
    connectionString: setting("LB_BROKER"),
    schema: setting("LB_BOSS_SCHEMA"),
    maintenanceIntervalSeconds: 1,
    monitorStateIntervalSeconds: 60,
  });
  b.on("error", (e) => console.error(`pg-boss: ${e.message}`));
  await b.start();
  await b.createQueue(QUEUE).catch(() => {});
  return b;
}

async function worker(name) {
  const b = await boss();
  closeOnSignal(() => b.stop({ graceful: true, timeout: 5000 }));
  await b.work(QUEUE, { batchSize: 1, pollingIntervalSeconds: 0.5 }, async ([job]) =>
    execute(name, job.data.trial, job.data.seconds, false),
  );
  console.log("ready");
}

async function enqueue(trial, secondsLong) {
  const b = await boss();
  await b.send(QUEUE, { trial, seconds: secondsLong }, {
    expireInSeconds: seconds("LB_EXPIRE_IN"),
    retryLimit: 1,
    retryDelay: 0,
  });
  await b.stop({ graceful: false, wait: true });
  console.log("enqueued");
}

async function main(argv) {
  if (argv.length === 2 && argv[0] === "worker") return worker(argv[1]);
  if (argv.length === 3 && argv[0] === "enqueue") return enqueue(argv[1], Number(argv[2]));
  console.error("usage: pgboss_runner.js worker NAME | enqueue TRIAL SECONDS");
  process.exit(2);
}

main(process.argv.slice(2)).catch((e) => {
  console.error(`pgboss_runner: ${e.message}`);
  process.exit(1);
});
