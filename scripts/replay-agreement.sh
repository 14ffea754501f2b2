#!/usr/bin/env bash
# Live against simulated runtimes, and requested against achieved call latency: the figures of
# docs/PERFORMANCE.md ("Live replay"). Billing at a tenth of its volume, baseline and month-end
# incident, 30 live runs each, at time scales 0.05 and 0.02, heartbeat mode on redis.
#   scripts/replay-agreement.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
require_toolchain
runs="${1:-30}"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || bad_input "RUNS: expected a whole number of live runs, 1 or more, got '$runs'"
scripts/services.sh up >/dev/null
cargo build --release --quiet
for time_scale in 0.05 0.02; do
  for profile in baseline month-end-incident; do
    echo "== billing / $profile x0.1, $runs runs, --time-scale $time_scale"
    ./target/release/lockbench replay workloads/specs/billing.toml --backend redis \
      --profile "$profile" --scale 0.1 --time-scale "$time_scale" --runs "$runs" --seed 2026 \
      2>&1 | grep -E "^(runtime|simulated|live /|  )"
  done
done
