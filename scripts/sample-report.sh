#!/usr/bin/env bash
# Regenerates the sample report committed under results/sample/ (linked from the README): a quick
# `lockbench run` against the local servers with a fixed seed. Figures from the benchmark and the
# live replay are this machine's.
#   scripts/sample-report.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
scripts/services.sh up
require_toolchain
cargo build --release --quiet --bin lockbench
rm -rf results/sample
target/release/lockbench run --quick --seed 2026 --out results/sample
say "sample report: results/sample/report/report.md"
