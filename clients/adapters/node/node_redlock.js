// node-redlock 5 (`redlock` on npm) over ioredis, as its README shows it: `new Redlock([clients])`
// and `redlock.using([resource], duration, routine)`, which extends the lock by itself while the
// routine runs and aborts the routine's `signal` (with `signal.error`) when it cannot.
//
// The lock is held by a `using` routine that waits for the release request: acquire answers
// when the routine starts, release ends it and answers with what `using`'s own release said.
// The signal's abort goes out as a `lost` event. No fencing token; `using` shows neither the
// lock's value nor its expiration, so token and validity are null.
"use strict";

const { library, version, lost, said, serve } = require("./lockbench_adapter");

const Redis = library("ioredis");
const RedlockModule = library("redlock");
const Redlock = RedlockModule.default;
const { ExecutionError } = RedlockModule;
// npm's name for it; the package.json in its tarball spells it "v5.0.0-beta.2".
const VERSION = version("redlock").replace(/^v/, "");

// Redlock's default retry delay (ms): a wait of W ms is W / 200 retries.
const RETRY_DELAY_MS = 200;

class NodeRedlock {
  static async open(hello) {
    const clients = hello.urls.map(
      (url) =>
        new Redis(url, {
          connectTimeout: hello.connect_timeout_ms,
          commandTimeout: hello.operation_timeout_ms,
          lazyConnect: true,
        }),
    );
    await Promise.all(clients.map((c) => c.connect()));
    return new NodeRedlock(clients, hello.namespace);
  }

  constructor(clients, namespace) {
    this.clients = clients;
    this.redlock = new Redlock(clients);
    this.namespace = namespace;
    this.locks = new Map();
  }

  describe() {
    return {
      library: "node-redlock",
      version: VERSION,
      backend: "redlock",
      renewal: "automatic",
      fencing: false,
      notifies_loss: true,
    };
  }

  acquire(key, ttlMs, waitMs) {
    const retryCount = waitMs > 0 ? Math.ceil(waitMs / RETRY_DELAY_MS) : 0;
    const resource = `${this.namespace}:client:${key}`;
    return new Promise((answer, fail) => {
      const holding = { signal: null, finish: null, done: null };
      let started = false;
      holding.done = this.redlock.using([resource], ttlMs, { retryCount }, (signal) => {
        started = true;
        holding.signal = signal;
        signal.addEventListener("abort", () => lost(key, said(signal.error)));
        this.locks.set(key, holding);
        answer({ held: true, token: null, fencing_token: null, validity_ms: null });
        return new Promise((finish) => {
          holding.finish = finish;
        });
      });
      holding.done.catch((e) => {
        if (started) return; // the release's answer, read by release()
        // Not granted within the retries: redlock's "no".
        if (e instanceof ExecutionError) answer({ held: false });
        else fail(e);
      });
    });
  }

  async renew(key) {
    // `using` extends by itself; asked, the adapter answers with the signal's view.
    return this.held(key);
  }

  async release(key) {
    const holding = this.locks.get(key);
    if (!holding) throw new Error(`release of ${key}, which this adapter does not hold`);
    holding.finish();
    try {
      await holding.done;
      this.locks.delete(key);
      return { released: true };
    } catch (e) {
      this.locks.delete(key);
      return { released: false, said: said(e) };
    }
  }

  async held(key) {
    const holding = this.locks.get(key);
    return { held: holding !== undefined && !holding.signal.aborted };
  }

  async close() {
    await Promise.all(this.clients.map((c) => c.quit().catch(() => {})));
  }
}

serve((hello) => NodeRedlock.open(hello));
