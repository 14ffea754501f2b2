#!/usr/bin/env bash
# The main job (README command 1): how long must the billing job's lock TTL be, what does today's
# 300 s TTL cost, and what does each lock backend cost per acquisition? Starts the local lock
# servers, then `lockbench run`: simulates the shipped workloads and derives their TTLs at 10x
# today's volume, benchmarks every backend, replays the billing incident live with a short TTL and
# with each defence, and writes a locking decision record (report.md, report.html, charts).
# Safe to run again: every run gets its own directory under results/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

say "== local lock servers"
scripts/services.sh up
say "== the lock client libraries the specs name (ledger: Curator)"
scripts/clients.sh up
require_toolchain
say "== building lockbench (release; from nothing 5 to 8 minutes on 2 cores)"
cargo build --release --quiet --bin lockbench
out=results/quickstart-$(date +%Y%m%d-%H%M%S)

say "== lockbench run: about 10 to 13 minutes on 2 cores (--quick: about 7): the TTLs in about 25 s (the first record, interim, in $out/report), the benchmark 1.5 to 4.5 minutes, the fault lab about 7, the rest about 1.5; each step prints its time as it ends"
target/release/lockbench run --out "$out" "$@"

say "results: $out; the decision record: $out/report/report.md (and report.html beside it)"
