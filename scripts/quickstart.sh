#!/usr/bin/env bash
# The main job (README command 1): how long must the billing job's lock TTL be, and what does
# today's 300 s TTL cost? Simulates the shipped workloads, derives the TTL for the month-end
# incident at 10x today's customers, and writes a results directory. Safe to run again: every run
# gets its own directory under results/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

require_toolchain
say "== building lockbench (release; the first build takes a few minutes)"
cargo build --release --quiet --bin lockbench
bin=target/release/lockbench
stamp=$(date +%Y%m%d-%H%M%S)
out=results/quickstart-$stamp

say "== checking the shipped specs"
"$bin" validate workloads/specs/*.toml

say "== runtimes of every profile at today's volume and at 10x"
"$bin" simulate workloads/specs/billing.toml workloads/specs/migration.toml \
    --scale 1 --scale 10 --replays 20000 --out "$out/simulate"

say "== TTL for billing, worst profile, at 10x today's customers, pricing today's 300 s TTL"
"$bin" ttl workloads/specs/billing.toml --target-scale 10 --current-ttl 300s \
    --replays 20000 --out "$out/ttl-billing"

say "== TTL for the migration orchestrator at 10x today's rows"
"$bin" ttl workloads/specs/migration.toml --target-scale 10 --current-ttl 15m \
    --replays 20000 --out "$out/ttl-migration"

say "results: $out (manifest, summary.csv, runtimes.hlog, results.json in each folder)"
