// The lockbench adapter protocol, Node side (docs/CLIENTS.md).
//
// An adapter is a process that speaks JSON Lines: one request per line on stdin, one reply per
// line on stdout, in order, plus events the library pushes (an aborted lock) at any time. Every
// message carries `t`, the machine's CLOCK_MONOTONIC in nanoseconds (process.hrtime.bigint reads
// it through libuv's uv_hrtime), the clock the protected resource logs with. An adapter module
// defines a class with the methods of the protocol and calls `serve`.
"use strict";

const path = require("path");
const readline = require("readline");

const PROTOCOL = 1;

// The libraries scripts/clients.sh installed (npm ci of this folder's lock file), outside the
// source tree.
const MODULES = path.resolve(__dirname, "../../../target/clients/node/node_modules");

function library(name) {
  return require(require.resolve(name, { paths: [MODULES] }));
}

// The installed version of a package, from its own package.json (which a package's `exports`
// may not let `require` reach).
function version(name) {
  return require(path.join(MODULES, name, "package.json")).version;
}

// Writes one message, stamped, as one line. `t` is a BigInt: JSON.stringify cannot write one,
// so it is appended as digits.
function send(message) {
  const body = JSON.stringify(message);
  const t = process.hrtime.bigint();
  process.stdout.write(`${body.slice(0, -1)}${body.length > 2 ? "," : ""}"t":${t}}\n`);
}

// Pushes a `lost` event: the library told its user the lock is gone.
function lost(key, why) {
  send({ event: "lost", key, why });
}

// The library's own words for an error: its class and message.
function said(error) {
  if (!(error instanceof Error)) return String(error);
  return `${error.name}: ${error.message}`;
}

// Reads the hello, opens the library with it (`await open(hello)`), then answers requests one
// at a time, in order, until stdin closes or a `bye` arrives.
async function serve(open) {
  let lib = null;
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const raw of lines) {
    const line = raw.trim();
    if (!line) continue;
    let request;
    try {
      request = JSON.parse(line);
    } catch (e) {
      send({ ok: false, error: `not JSON: ${e.message}` });
      continue;
    }
    const { op, id = null } = request;
    try {
      let reply;
      if (op === "hello") {
        if (request.protocol !== PROTOCOL) {
          throw new Error(`protocol ${request.protocol}; this adapter speaks ${PROTOCOL}`);
        }
        const opened = await open(request);
        reply = { ...opened.describe(), protocol: PROTOCOL };
        lib = opened;
      } else if (lib === null) {
        throw new Error(`${op} before hello`);
      } else if (op === "acquire") {
        reply = await lib.acquire(request.key, Number(request.ttl_ms), Number(request.wait_ms));
      } else if (op === "renew") {
        reply = await lib.renew(request.key, Number(request.ttl_ms));
      } else if (op === "release") {
        reply = await lib.release(request.key);
      } else if (op === "held") {
        reply = await lib.held(request.key);
      } else if (op === "bye") {
        send({ id, ok: true });
        break;
      } else {
        throw new Error(`unknown op ${op}`);
      }
      send({ ...reply, id, ok: true });
    } catch (e) {
      // The library's failure is an answer, sent back in one line.
      process.stderr.write(`${e && e.stack ? e.stack : e}\n`);
      send({ id, ok: false, error: said(e) });
    }
  }
  if (lib !== null) await lib.close();
  process.exit(0);
}

module.exports = { library, version, send, lost, said, serve };
