#!/usr/bin/env bash
# Regenerates the sample report committed under results/sample/ (linked from the README): a full
# `lockbench run` (not --quick: its P99.9s rest on 20,000 replays) against the local servers with
# a fixed seed, from a release build. Figures from the benchmark and the live replay are this
# machine's.
#   scripts/sample-report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
scripts/services.sh up
require_toolchain
cargo build --release --quiet --bin lockbench
rm -rf results/sample
scripts/clients.sh up
target/release/lockbench run --seed 2026 --out results/sample
say "sample report: results/sample/report/report.md"
