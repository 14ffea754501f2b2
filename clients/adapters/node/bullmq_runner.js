// A BullMQ worker and producer for the fault lab's runner cells (docs/FAULTS.md, "runner").
//
//   bullmq_runner.js worker NAME            one worker (concurrency 1) until SIGTERM; prints
//                                           `ready` once it consumes
//   bullmq_runner.js enqueue TRIAL SECONDS  adds one job whose processor holds the event loop
//                                           for SECONDS (a CPU-bound stretch)
//
// The lab passes its settings in the environment: LB_BROKER (its private redis-server),
// LB_RESOURCE and LB_SCHEMA (the protected resource), LB_LOCK_DURATION and LB_STALLED_INTERVAL
// (seconds), and for the stall cells LB_AGAIN_SECONDS (runner_job.js). A worker renews its job's lock from its event loop every lockDuration / 2; a stretch
// longer than lockDuration lets another worker's stalled-job check move the job back to wait, and
// that worker runs it (at most maxStalledCount times, 1 by default).
"use strict";

const { library, setting, seconds, execute, closeOnSignal } = require("./runner_job");

const QUEUE = "lockbench-runner";

function connection() {
  const url = new URL(setting("LB_BROKER"));
  return { host: url.hostname, port: Number(url.port || 6379), maxRetriesPerRequest: null };
}

async function worker(name) {
  const { Worker } = library("bullmq");
  const w = new Worker(QUEUE, async (job) => execute(name, job.data.trial, job.data.seconds, true), {
    connection: connection(),
    concurrency: 1,
    lockDuration: Math.round(seconds("LB_LOCK_DURATION") * 1000),
    stalledInterval: Math.round(seconds("LB_STALLED_INTERVAL") * 1000),
  });
  // A job moved back or failed for stalling is the runner's doing, recorded by the log; the
  // first worker's late completion is refused ("Missing lock for job"): said, not fatal.
  w.on("error", (e) => console.error(`bullmq: ${e.message}`));
  w.on("failed", (job, e) => console.error(`bullmq: job ${job?.id} failed: ${e.message}`));
  closeOnSignal(() => w.close());
  await w.waitUntilReady();
  console.log("ready");
}

async function enqueue(trial, secondsLong) {
  const { Queue } = library("bullmq");
  const q = new Queue(QUEUE, { connection: connection() });
  await q.add("job", { trial, seconds: secondsLong }, { removeOnComplete: true, removeOnFail: true });
  await q.close();
  console.log("enqueued");
}

async function main(argv) {
  if (argv.length === 2 && argv[0] === "worker") return worker(argv[1]);
  if (argv.length === 3 && argv[0] === "enqueue") return enqueue(argv[1], Number(argv[2]));
  console.error("usage: bullmq_runner.js worker NAME | enqueue TRIAL SECONDS");
  process.exit(2);
}

main(process.argv.slice(2)).catch((e) => {
  console.error(`bullmq_runner: ${e.message}`);
  process.exit(1);
});
