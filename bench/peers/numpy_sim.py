#!/usr/bin/env python3
"""The peer figure for lockbench's simulator: the same three-step lognormal job, vectorised numpy.

Each replay is 1,800 items x 3 steps of lognormal latency (p50/p99 as in the lockbench spec
bench/peers/three-step-lognormal.toml); the runtime of a replay is the sum. numpy draws in chunks
of replays to bound memory. Prints one JSON line: samples, elapsed_s, samples_per_s.
"""
import json
import sys
import time

import numpy as np

Z99 = 2.3263478740408408
STEPS = [(0.003, 0.012), (0.110, 0.340), (0.004, 0.015)]  # (p50, p99) seconds
ITEMS = 1800


def main() -> None:
    replays = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    chunk = 500
    rng = np.random.default_rng(1)
    params = [(np.log(p50), np.log(p99 / p50) / Z99) for p50, p99 in STEPS]
    runtimes = np.empty(replays)
    started = time.perf_counter()
    for first in range(0, replays, chunk):
        n = min(chunk, replays - first)
        total = np.zeros(n)
        for mu, sigma in params:
            total += rng.lognormal(mu, sigma, size=(n, ITEMS)).sum(axis=1)
        runtimes[first : first + n] = total
    elapsed = time.perf_counter() - started
    samples = replays * ITEMS * len(STEPS)
    print(
        json.dumps(
            {
                "samples": samples,
                "elapsed_s": round(elapsed, 3),
                "samples_per_s": samples / elapsed,
                "runtime_p50_s": float(np.percentile(runtimes, 50)),
                "runtime_p999_s": float(np.percentile(runtimes, 99.9)),
            }
        )
    )


if __name__ == "__main__":
    main()
