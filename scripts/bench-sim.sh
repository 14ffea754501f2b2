#!/usr/bin/env bash
# Simulator throughput, side by side in one run: vectorised numpy (one core) against
# `lockbench simulate` (every core) on the same three-step lognormal job of 1,800 items,
# plus peak memory at 1,000,000 replays. Figures go to docs/PERFORMANCE.md.
#
#   scripts/bench-sim.sh [REPLAYS]      default 100000
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
replays="${1:-100000}"
[[ "$replays" =~ ^[1-9][0-9]*$ ]] || bad_input "REPLAYS: expected a whole number of replays, 1 or more, got '$replays'"
spec=bench/peers/three-step-lognormal.toml

if ! python3 -c 'import numpy' 2>/dev/null; then
    echo "bench-sim: installing numpy for the peer figure (pip)" >&2
    python3 -m pip install --quiet numpy
fi
command -v /usr/bin/time >/dev/null || { echo "bench-sim: /usr/bin/time is missing: apt-get install time" >&2; exit 1; }

cargo build --release --quiet --bin lockbench
bin=target/release/lockbench

echo "== numpy, one core, $replays replays"
numpy_json=$(python3 bench/peers/numpy_sim.py "$replays")
echo "$numpy_json"
echo "== lockbench simulate, $(nproc) threads, $replays replays"
ours_json=$("$bin" simulate "$spec" --replays "$replays" --seed 1 --json)
echo "$ours_json" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(json.dumps({k: d[k] for k in ("latency_samples","elapsed_s","samples_per_s")}))'
python3 - "$numpy_json" "$ours_json" <<'PY'
import json, sys
numpy_rate = json.loads(sys.argv[1])["samples_per_s"]
ours_rate = json.loads(sys.argv[2])["samples_per_s"]
print(f"numpy {numpy_rate/1e6:.1f} M samples/s, lockbench {ours_rate/1e6:.1f} M samples/s: {ours_rate/numpy_rate:.2f}x (target 4x)")
PY

echo "== peak memory, 1,000,000 replays (target: within 100 MB)"
/usr/bin/time -f "peak RSS %M KB, %e s" "$bin" simulate "$spec" --replays 1000000 --seed 1 --json >/dev/null
