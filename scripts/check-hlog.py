#!/usr/bin/env python3
"""Decodes every HdrHistogram interval log (.hlog) under the given folders with HdrHistogram's own
Python reader (the `hdrhistogram` package, module `hdrh`), not lockbench's decoder, and compares
each histogram with the figures lockbench wrote beside it: counts, P50, P99, P99.9 and max against
summary.csv (simulate, ttl), bench.csv (bench) and results.json (replay).

    python3 scripts/check-hlog.py results/sample analysis/tests/fixtures/run

Exit 0 when every log decodes and agrees, 1 otherwise (one line per disagreement). Counts must be
equal. The reader rounds a percentile's rank to the nearest where lockbench takes the next one, so
on a few hundred samples the two can name neighbouring samples: a percentile agrees when the value
lockbench wrote is within 0.5 % (a bucket's width at three significant digits, either way) of the
reader's value at the percentile's rank or at a rank one or two away. The max within 0.5 %.
"""

import csv
import json
import math
import os
import sys

from hdrh.log import HistogramLogReader


def read_log(path):
    """Every (tag, histogram) in the log, and the unit its comment names, in seconds."""
    with open(path) as f:
        text = f.read()
    scale = 1e-9 if "#values in nanoseconds" in text else 1e-6
    reader = HistogramLogReader(path, None)
    out = []
    while True:
        h = reader.get_next_interval_histogram()
        if h is None:
            break
        out.append((h.get_tag(), h))
    if not out:
        raise ValueError(f"{path}: no histogram decoded (the reader refused the encoding)")
    lines = sum(1 for l in text.splitlines() if l.startswith("Tag="))
    if len(out) != lines:
        raise ValueError(f"{path}: decoded {len(out)} of {lines} histograms")
    return out, scale


PERCENTILES = (("P50", 50.0), ("P99", 99.0), ("P99.9", 99.9))
TOLERANCE = 0.005


def close(got, want, tolerance=TOLERANCE):
    if want == 0:
        return abs(got) < 1e-6
    return abs(got / want - 1.0) <= tolerance


def near(h, percentile, want, scale):
    """The reader's value at `percentile` and whether `want` is it, up to the rank convention."""
    n = h.get_total_count()
    middle = math.ceil(percentile / 100.0 * n)
    for delta in (0, -1, 1, -2, 2):
        rank = max(1, min(n, middle + delta))
        value = h.get_value_at_percentile(rank * 100.0 / n) * scale
        if close(value, want):
            return value, True
    return h.get_value_at_percentile(percentile) * scale, False


def compare(where, h, scale, want):
    """Problems between the decoded histogram `h` and the figures written beside it `want`
    (count, p50, p99, p999, max; a None is not compared)."""
    problems = []
    count = h.get_total_count()
    if count != want[0]:
        return [f"{where}: count {count} in the log, {want[0]} beside it"]
    for (name, percentile), expected in zip(PERCENTILES, want[1:4]):
        if expected is None:
            continue
        value, ok = near(h, percentile, expected, scale)
        if not ok:
            problems.append(f"{where}: {name} {value:.9g} s in the log, {expected:.9g} s beside it")
    if want[4] is not None and not close(h.get_max_value() * scale, want[4]):
        problems.append(f"{where}: max {h.get_max_value() * scale:.9g} s in the log, {want[4]:.9g} s beside it")
    return problems


def check_runtimes(folder, logs, scale):
    rows = {}
    with open(os.path.join(folder, "summary.csv")) as f:
        for r in csv.DictReader(f):
            tag = f"{r['workload']}/{r['profile']}/scale={r['scale']}"
            rows[tag] = (
                int(r["replays"]),
                float(r["runtime_p50_s"]),
                float(r["runtime_p99_s"]),
                float(r["runtime_p999_s"]),
                float(r["runtime_max_s"]),
            )
    problems = []
    for tag, h in logs:
        key = tag
        if key not in rows:
            # The summary prints the scale as a float; the tag as written by the simulator.
            key = next((k for k in rows if k.split("/scale=")[0] == tag.split("/scale=")[0]
                        and float(k.split("=")[-1]) == float(tag.split("=")[-1])), None)
        if key is None:
            problems.append(f"{folder}: {tag} has no row in summary.csv")
            continue
        problems += compare(f"{folder}: {tag}", h, scale, rows[key])
    return problems


def check_bench(folder, logs, scale):
    rows = {}
    with open(os.path.join(folder, "bench.csv")) as f:
        for r in csv.DictReader(f):
            if r["mode"] != "closed":
                continue
            # A row measured through a client library ("redis-py 8.1.0" in its client column,
            # absent from files written before) is tagged backend+library.
            library = (r.get("client") or "").split(" ")[0]
            backend = f"{r['backend']}+{library}" if library else r["backend"]
            tag = f"{backend}/{r['mode']}/{r['keys']}/c={r['contenders']}/acquire"
            rows[tag] = (
                int(r["ops"]),
                float(r["acquire_p50_us"]) * 1e-6,
                float(r["acquire_p99_us"]) * 1e-6,
                float(r["acquire_p999_us"]) * 1e-6,
                float(r["acquire_max_us"]) * 1e-6,
            )
    problems = []
    checked = 0
    for tag, h in logs:
        if tag in rows:
            checked += 1
            # Figures below ten microseconds print with two decimals in bench.csv.
            want = tuple(w if i == 0 or w >= 1e-5 else None for i, w in enumerate(rows[tag]))
            problems += compare(f"{folder}: {tag}", h, scale, want)
    if checked == 0:
        problems.append(f"{folder}: no acquire histogram matches a row of bench.csv")
    return problems


def check_replay(folder, logs, scale):
    with open(os.path.join(folder, "results.json")) as f:
        r = json.load(f)["runtime_s"]
    want = (r["replays"], r["p50"], r["p99"], r["p999"], r["max"])
    live = [h for tag, h in logs if tag == "live"]
    if not live:
        return [f"{folder}: no `live` histogram in replay.hlog"]
    return compare(f"{folder}: live", live[0], scale, want)


CHECKS = {"simulate": check_runtimes, "ttl": check_runtimes, "bench": check_bench, "replay": check_replay}


def main(roots):
    problems, logs_checked = [], 0
    for root in roots:
        for folder, _, files in sorted(os.walk(root)):
            hlogs = [f for f in files if f.endswith(".hlog")]
            if not hlogs or "manifest.json" not in files:
                continue
            with open(os.path.join(folder, "manifest.json")) as f:
                command = json.load(f)["command"]
            for name in hlogs:
                path = os.path.join(folder, name)
                try:
                    logs, scale = read_log(path)
                except Exception as e:  # the reader's own refusal, in one line
                    problems.append(f"{path}: {type(e).__name__}: {e}")
                    continue
                check = CHECKS.get(command)
                if check is None:
                    problems.append(f"{path}: written by `{command}`, which this check does not know")
                    continue
                problems += check(folder, logs, scale)
                logs_checked += 1
                print(f"ok: {path}: {len(logs)} histograms decoded by hdrh")
    for p in problems:
        print(f"check-hlog: {p}", file=sys.stderr)
    if logs_checked == 0:
        print("check-hlog: no .hlog found under " + ", ".join(roots), file=sys.stderr)
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["results/sample"]))
