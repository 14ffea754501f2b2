#!/usr/bin/env bash
# The main job (README command 1): how long must the billing job's lock TTL be, what does today's
# 300 s TTL cost, and what does each lock backend cost per acquisition? Simulates the shipped
# workloads, derives the TTLs at 10x today's volume, benchmarks every local backend, replays the
# billing incident live with a short TTL and with a heartbeat, and writes results directories. Safe to run again: every run gets its own directory under results/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

say "== local lock servers"
scripts/services.sh up
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

say "== acquisition latency of every backend, alone and with 4 contenders on one key"
"$bin" bench --contenders 1,4 --duration 3s --warmup 1s --out "$out/bench"

say "== the story live: billing incident at a tenth of the volume, 50x compressed, a 20 s TTL vs heartbeat"
"$bin" replay workloads/specs/billing.toml --backend redis --profile month-end-incident \
    --scale 0.1 --time-scale 0.02 --runs 3 --ttl 20s --out "$out/replay-ttl"
"$bin" replay workloads/specs/billing.toml --backend redis --profile month-end-incident \
    --scale 0.1 --time-scale 0.02 --runs 3 --heartbeat --out "$out/replay-heartbeat"

say "results: $out (a manifest.json, CSV, HdrHistogram log and results.json in each folder)"
