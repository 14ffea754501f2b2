#!/usr/bin/env bash
# Harness overhead against the peers, same servers, same run, one client:
#   redis:      lockbench's uncontended `redis` acquire P50 vs redis-benchmark's P50 for
#               SET k v NX PX 30000 (and for EVAL of lockbench's acquire script, same server work)
#   pg-session: lockbench's uncontended acquire mean vs pgbench's mean latency for
#               SELECT pg_try_advisory_lock(k)
# Rounds alternate peer and lockbench so that machine noise hits both. Figures go to
# docs/PERFORMANCE.md.
#
#   scripts/bench-peers.sh [ROUNDS]      default 3
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
rounds="${1:-3}"

scripts/services.sh up >/dev/null
require_toolchain
cargo build --release --quiet --bin lockbench
bin=target/release/lockbench
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
script="if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end return false"
pgfile=$(mktemp)
trap 'rm -f "$pgfile"' EXIT
echo "SELECT pg_try_advisory_lock(42);" >"$pgfile"

# p50 in microseconds from redis-benchmark's "latency summary (msec)" block.
redis_p50() { awk '/latency summary/ { getline; getline; print $3 * 1000; exit }'; }
ours() { python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]['acquire_us']; print(r['$1'])"; }

for ((round = 1; round <= rounds; round++)); do
    set_p50=$(redis-benchmark -p 6390 -c 1 -n 50000 SET lockbench:peer v NX PX 30000 | redis_p50)
    eval_p50=$(redis-benchmark -p 6390 -c 1 -n 50000 EVAL "$script" 2 lockbench:peer lockbench:peer-fence v 30000 | redis_p50)
    redis-cli -p 6390 del lockbench:peer lockbench:peer-fence >/dev/null
    our_redis=$("$bin" bench --backend redis --contenders 1 --ops 50000 --warmup 1s --json | ours p50)
    pgbench_ms=$("$pg_bin/pgbench" -n -h 127.0.0.1 -p 5442 -U postgres -c 1 -T 8 -f "$pgfile" postgres 2>/dev/null \
        | awk -F' = ' '/latency average/ { print $2 + 0 }')
    our_pg=$("$bin" bench --backend pg-session --contenders 1 --duration 8s --warmup 1s --json | ours mean)
    python3 - "$round" "$set_p50" "$eval_p50" "$our_redis" "$pgbench_ms" "$our_pg" <<'PY'
import sys
r, set_p50, eval_p50, ours, pg_ms, our_pg = sys.argv[1], *map(float, sys.argv[2:])
pg_us = pg_ms * 1000
print(f"round {r}: redis P50 lockbench {ours:.1f} us / redis-benchmark SET {set_p50:.1f} us = {ours/set_p50:.2f}x "
      f"(EVAL of the same script {eval_p50:.1f} us: {ours/eval_p50:.2f}x); "
      f"pg-session mean lockbench {our_pg:.1f} us / pgbench {pg_us:.1f} us = {our_pg/pg_us:.2f}x")
PY
done
