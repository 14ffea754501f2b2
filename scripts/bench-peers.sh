#!/usr/bin/env bash
# Harness overhead against the peers, same servers, same run, one client:
#   redis:      lockbench's uncontended `redis` acquire P50 vs redis-benchmark's P50 for
#               SET k v NX PX 30000, and with fencing on, vs EVAL of lockbench's acquire script
#   pg-session: lockbench's uncontended acquire mean vs pgbench's mean latency for
#               SELECT pg_try_advisory_lock(k)
# Every lockbench acquisition is granted (the key is released after each), so the peers get a new
# key per request (__rand_int__, random(...)): redis-benchmark's SET NX repeated on one key is
# refused after the first and never writes, and pgbench re-locking one key only bumps a counter.
# Both same-key figures are printed too.
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
plain=$(mktemp --suffix .toml)
trap 'rm -f "$pgfile" "$plain"' EXIT
# Lock a new key and unlock it; `pgbench -r` reports the lock statement's own mean latency.
printf '\\set k random(1, 1000000000)\nSELECT pg_try_advisory_lock(:k);\nSELECT pg_advisory_unlock(:k);\n' >"$pgfile"
# The same command as redis-benchmark's: SET NX PX without the fencing INCR.
printf '[backends.redis]\nurls = ["redis://127.0.0.1:6390"]\nfencing = false\n' >"$plain"

# p50 in microseconds from redis-benchmark's "latency summary (msec)" block.
redis_p50() { awk '/latency summary/ { getline; getline; print $3 * 1000; exit }'; }
ours() { python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]['acquire_us']; print(r['$1'])"; }

for ((round = 1; round <= rounds; round++)); do
    same_p50=$(redis-benchmark -p 6390 -c 1 -n 50000 SET lockbench:peer v NX PX 30000 | redis_p50)
    # New keys expire by themselves after the 1 s PX.
    set_p50=$(redis-benchmark -p 6390 -c 1 -n 50000 -r 1000000000 SET lockbench:peer:__rand_int__ v NX PX 1000 | redis_p50)
    eval_p50=$(redis-benchmark -p 6390 -c 1 -n 50000 -r 1000000000 EVAL "$script" 2 lockbench:peer:__rand_int__ lockbench:peer-fence v 1000 | redis_p50)
    redis-cli -p 6390 del lockbench:peer lockbench:peer-fence >/dev/null
    our_plain=$("$bin" bench --config "$plain" --backend redis --contenders 1 --ops 50000 --warmup 1s --json | ours p50)
    our_redis=$("$bin" bench --backend redis --contenders 1 --ops 50000 --warmup 1s --json | ours p50)
    pgbench_ms=$("$pg_bin/pgbench" -n -r -h 127.0.0.1 -p 5442 -U postgres -c 1 -T 8 -f "$pgfile" postgres 2>/dev/null \
        | awk '/SELECT pg_try_advisory_lock/ { print $1 + 0 }')
    our_pg=$("$bin" bench --backend pg-session --contenders 1 --duration 8s --warmup 1s --json | ours mean)
    python3 - "$round" "$set_p50" "$eval_p50" "$our_plain" "$our_redis" "$pgbench_ms" "$our_pg" "$same_p50" <<'PY'
import sys
r, set_p50, eval_p50, plain, ours, pg_ms, our_pg, same = sys.argv[1], *map(float, sys.argv[2:])
pg_us = pg_ms * 1000
print(f"round {r}: redis P50: lockbench SET NX PX (fencing = false) {plain:.1f} us / redis-benchmark SET on new keys {set_p50:.1f} us = {plain/set_p50:.2f}x (same key: {same:.1f} us); "
      f"lockbench with fencing script {ours:.1f} us / redis-benchmark EVAL of that script {eval_p50:.1f} us = {ours/eval_p50:.2f}x; "
      f"pg-session mean lockbench {our_pg:.1f} us / pgbench {pg_us:.1f} us = {our_pg/pg_us:.2f}x")
PY
done
