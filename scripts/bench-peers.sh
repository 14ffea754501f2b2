#!/usr/bin/env bash
# Harness overhead against the peers, same servers, same run, one client:
#   redis:      lockbench's uncontended `redis` acquire P50 vs redis-benchmark's P50 for
#               SET k v NX PX, and with fencing on, vs EVAL of lockbench's acquire script
#   pg-session: lockbench's uncontended acquire mean vs pgbench's mean latency for
#               SELECT pg_try_advisory_lock(k), and with fencing on, vs pgbench running
#               lockbench's acquire statement (the lock, then nextval of the fencing sequence)
# Every lockbench acquisition is granted (the key is released after each), so the peers get a
# new key per request (__rand_int__, random(...)): redis-benchmark's SET NX repeated on one key
# is refused after the first and never writes, and pgbench re-locking one key only bumps a
# counter.
#
# Where the client runs against the server decides most of a loopback round trip on a VM: on
# the server's vCPU it is a few microseconds of software, on the other vCPU the hypervisor's
# wake-up of an idle vCPU adds some 65 us. Left to the scheduler, the two programs are placed
# differently and the comparison measures placement, not clients. So each round measures
# peer and lockbench in three placements: `same` (servers and client on the last CPU),
# `apart` (servers on the last CPU, client on the first) and `free` (nobody pinned). Servers'
# CPU affinity is restored on exit. With more than one round, the medians of each column over the
# rounds follow the rounds' table.
#
# Then the contended figures of issue 23, each a ratio within one run (nobody pinned):
#   etcd:       8 contenders, native wait: handoff P99.9 against the same run's release P99.9,
#               beside etcd's own /metrics over the run (WAL fsync and backend commit P99, the
#               watchers it put in its unsynced group)
#   redis:      the release channel against the fair queue (--backend redis-fair), 1 and 8
#               contenders: Jain fairness, handoff P50 against the uncontended acquire P50,
#               requests per grant
#   baselines:  the in-process backend's cycles/s (the harness's own cost) and the simulator's
#               samples/s, which the work on the clients must not move
# Figures go to docs/PERFORMANCE.md.
#
#   scripts/bench-peers.sh [ROUNDS]      default 3; 0: the contended figures alone
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
REDIS_PORT=$(config_port redis)
PG_PORT=$(config_port pg-session)
rounds="${1:-3}"
[[ "$rounds" =~ ^(0|[1-9][0-9]{0,2})$ ]] || bad_input "ROUNDS: expected a whole number of rounds from 0 (the contended figures alone) to 999, got '$rounds'"

scripts/services.sh up >/dev/null
require_toolchain
ensure_packages iproute2 util-linux curl
cargo build --release --quiet --bin lockbench
bin=target/release/lockbench
pg_bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
cpus=$(nproc)
[ "$cpus" -ge 2 ] || die "the placements need two CPUs, this machine has $cpus"
server_cpu=$((cpus - 1))
script="if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return redis.call('INCR', KEYS[2]) end return false"
ETCD_PORT=$(config_port etcd)
# Every scratch file, in one folder of a fixed name: the trap below removes it, and a run killed
# with -9 (which runs no trap) leaves it for the next run to remove. Runs do not overlap: each
# pins the servers.
scratch="${TMPDIR:-/tmp}/lockbench-bench-peers"
rm -rf "$scratch"
mkdir -p "$scratch"
rows="$scratch/rows"
pgfile="$scratch/lock.sql"
pgfence="$scratch/lock-fenced.sql"
plain="$scratch/plain.toml"
before="$scratch/metrics-before"
after="$scratch/metrics-after"
slow="$scratch/unsynced"
etcd_json="$scratch/etcd.json"
redis_json="$scratch/redis.json"
# Lock a new key and unlock it; `pgbench -r` reports the lock statement's own mean latency.
printf '\\set k random(1, 1000000000)\nSELECT pg_try_advisory_lock(:k);\nSELECT pg_advisory_unlock(:k);\n' >"$pgfile"
printf '\\set k random(1, 1000000000)\nSELECT CASE WHEN pg_try_advisory_lock(:k) THEN nextval(%s::regclass) END;\nSELECT pg_advisory_unlock(:k);\n' "'lockbench_peer_fencing'" >"$pgfence"
# The peers' commands: SET NX PX without the fencing INCR, the lock function without nextval.
printf '[backends.redis]\nurls = ["redis://127.0.0.1:%s"]\nfencing = false\n[backends.pg-session]\nurls = ["postgres://postgres@127.0.0.1:%s/postgres"]\nfencing = false\n' "$REDIS_PORT" "$PG_PORT" >"$plain"
psql_() { "$pg_bin/psql" -q -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -c "$1" >/dev/null; }
psql_ "CREATE SEQUENCE IF NOT EXISTS lockbench_peer_fencing"

listener() { ss -Hltnp "sport = :$1" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2; }
redis_pid=$(listener "$REDIS_PORT")
pg_pid=$(listener "$PG_PORT")
[ -n "$redis_pid" ] && [ -n "$pg_pid" ] || die "cannot find the redis ($REDIS_PORT) and postgres ($PG_PORT) processes"
# The postmaster and its children; backends forked later inherit the postmaster's affinity.
server_pids() { echo "$redis_pid" "$pg_pid" $(pgrep -P "$pg_pid" || true); }
pin_servers() { for pid in $(server_pids); do taskset -a -p -c "$1" "$pid" >/dev/null 2>&1 || true; done; }
# This script's processes below it (a bench, a peer, the metrics sampler): a supervisor's
# SIGTERM to the script alone must not leave them running.
descendants() { local child; for child in $(pgrep -P "$1" || true); do descendants "$child"; echo "$child"; done; }
restore() {
    kill $(descendants $$) 2>/dev/null || true
    pin_servers "0-$((cpus - 1))"
    psql_ "DROP SEQUENCE IF EXISTS lockbench_peer_fencing" || true
    rm -rf "$scratch"
}
trap restore EXIT
# A run killed with -9 cannot restore: the next one starts from servers on every CPU (and its
# sequence is dropped at this one's end).
pin_servers "0-$((cpus - 1))"

# p50 in microseconds from redis-benchmark's "latency summary (msec)" block.
redis_p50() { awk '/latency summary/ { getline; getline; print $3 * 1000; exit }'; }
ours() { python3 -c "import json,sys; r=json.load(sys.stdin)['results'][0]['acquire_us']; print(r['$1'])"; }

pgbench_mean() { # script file -> mean latency of the lock statement in us
    "${on[@]}" "$pg_bin/pgbench" -n -r -h 127.0.0.1 -p "$PG_PORT" -U postgres -c 1 -T 6 -f "$1" postgres 2>/dev/null \
        | awk '/SELECT .*pg_try_advisory_lock/ { print $1 * 1000 }'
}
echo "| round | placement | redis-benchmark SET NX PX P50 | lockbench redis, fencing off, P50 | ratio | redis-benchmark EVAL of our script P50 | lockbench redis P50 | ratio | pgbench lock mean | lockbench pg-session, fencing off, mean | ratio | pgbench lock + nextval mean | lockbench pg-session mean | ratio |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
for ((round = 1; round <= rounds; round++)); do
    for placement in same apart free; do
        case $placement in
            same) pin_servers "$server_cpu"; on=(taskset -c "$server_cpu") ;;
            apart) pin_servers "$server_cpu"; on=(taskset -c 0) ;;
            free) pin_servers "0-$((cpus - 1))"; on=() ;;
        esac
        # New keys expire by themselves after the 1 s PX.
        set_p50=$("${on[@]}" redis-benchmark -p "$REDIS_PORT" -c 1 -n 50000 -r 1000000000 SET lockbench:peer:__rand_int__ v NX PX 1000 | redis_p50)
        our_plain=$("${on[@]}" "$bin" bench --config "$plain" --backend redis --contenders 1 --ops 50000 --warmup 1s --json | ours p50)
        eval_p50=$("${on[@]}" redis-benchmark -p "$REDIS_PORT" -c 1 -n 50000 -r 1000000000 EVAL "$script" 2 lockbench:peer:__rand_int__ lockbench:peer-fence v 1000 | redis_p50)
        redis-cli -p "$REDIS_PORT" del lockbench:peer-fence >/dev/null
        our_redis=$("${on[@]}" "$bin" bench --backend redis --contenders 1 --ops 50000 --warmup 1s --json | ours p50)
        pg_us=$(pgbench_mean "$pgfile")
        our_pg_plain=$("${on[@]}" "$bin" bench --config "$plain" --backend pg-session --contenders 1 --duration 6s --warmup 1s --json | ours mean)
        pg_fence_us=$(pgbench_mean "$pgfence")
        our_pg=$("${on[@]}" "$bin" bench --backend pg-session --contenders 1 --duration 6s --warmup 1s --json | ours mean)
        echo "$round $placement $set_p50 $our_plain $eval_p50 $our_redis $pg_us $our_pg_plain $pg_fence_us $our_pg" >>"$rows"
        python3 - "$round" "$placement" "$set_p50" "$our_plain" "$eval_p50" "$our_redis" "$pg_us" "$our_pg_plain" "$pg_fence_us" "$our_pg" <<'PY'
import sys
r, placement = sys.argv[1:3]
v = list(map(float, sys.argv[3:]))
cells = []
for peer, ours in zip(v[0::2], v[1::2]):
    cells += [f"{peer:.0f} us", f"{ours:.1f} us", f"{ours / peer:.2f}x"]
print(f"| {r} | {placement} | " + " | ".join(cells) + " |")
PY
    done
done
# One round's pair moves by a peer bucket (redis-benchmark's are 8 us wide) from one run to the
# next; the median of each column over the rounds is the figure to quote.
if [ "$rounds" -gt 1 ]; then
    echo
    python3 - "$rows" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
print("| placement | " + " | ".join(
    f"{c}: peer / lockbench medians, ratio" for c in
    ["redis fencing off", "redis fencing on", "pg-session fencing off", "pg-session fencing on"]) + " |")
print("|---|---|---|---|---|")
for placement in ["same", "apart", "free"]:
    values = [list(map(float, r[2:])) for r in rows if r[1] == placement]
    cells = []
    for i in range(0, 8, 2):
        peer = statistics.median(v[i] for v in values)
        ours = statistics.median(v[i + 1] for v in values)
        cells.append(f"{peer:.1f} / {ours:.1f} us, {ours / peer:.2f}x")
    print(f"| {placement} (median of {len(values)}) | " + " | ".join(cells) + " |")
PY
fi

echo
echo "== contended, nobody pinned"
pin_servers "0-$((cpus - 1))"
metrics() { curl -fsS "http://127.0.0.1:$ETCD_PORT/metrics"; }
metrics >"$before"
# etcd's gauge of unsynced watchers, sampled through the run: a watch that lands there waits for
# the 100 ms sync loop.
(for _ in $(seq 200); do metrics | awk '/^etcd_debugging_mvcc_slow_watcher_total/ {print $2}'; sleep 0.03; done) >"$slow" &
sampler=$!
"$bin" bench --backend etcd --contenders 8 --duration 5s --warmup 1s --json >"$etcd_json"
wait "$sampler" || true
metrics >"$after"
python3 - "$etcd_json" "$before" "$after" "$slow" <<'PY'
import json, sys
row = json.load(open(sys.argv[1]))["results"][0]
def buckets(path, name, match=""):
    out = {}
    for line in open(path):
        if line.startswith(name + "_bucket{") and match in line:
            le = line.split('le="')[1].split('"')[0]
            out[float("inf") if le == "+Inf" else float(le)] = float(line.split()[-1])
    return out
def quantile_ms(q, name, match=""):
    """The bucket bound under which q of the run's samples fell (etcd's histograms are coarse)."""
    b0, b1 = buckets(sys.argv[2], name, match), buckets(sys.argv[3], name, match)
    counts = sorted((le, b1[le] - b0.get(le, 0)) for le in b1)
    if not counts or counts[-1][1] == 0:
        return "-"
    for le, c in counts:
        if c >= q * counts[-1][1]:
            return f"<={le * 1000:g}"
samples = [float(x) for x in open(sys.argv[4]) if x.strip()]
handoff, release = row["handoff_us"], row["release_us"]
print(f"etcd, 8 contenders: handoff P99.9 {handoff['p999'] / 1000:.1f} ms, release P99.9 {release['p999'] / 1000:.1f} ms: "
      f"{handoff['p999'] / release['p999']:.2f}x (target within 2x); handoff P50 {handoff['p50'] / 1000:.2f} ms, "
      f"release P50 {release['p50'] / 1000:.2f} ms, {row['requests_per_grant']:.2f} requests per grant, "
      f"{row['throughput_per_s']:.0f} grants/s")
grpc, fsync = "grpc_server_handling_seconds", "etcd_disk_wal_fsync_duration_seconds"
revoke = [quantile_ms(q, grpc, 'grpc_method="LeaseRevoke"') for q in (0.5, 0.99)]
reads = [quantile_ms(q, grpc, 'grpc_method="Range"') for q in (0.5, 0.99)]
syncs = [quantile_ms(q, fsync) for q in (0.5, 0.99)]
unsynced = sum(1 for s in samples if s > 0)
print("  etcd's /metrics over the run, P50 / P99 in ms (bucket bounds): "
      f"LeaseRevoke (the release) {revoke[0]} / {revoke[1]}, Range (the waiter's read) "
      f"{reads[0]} / {reads[1]}, WAL fsync {syncs[0]} / {syncs[1]}; watchers in the unsynced "
      f"group in {unsynced} of {len(samples)} samples")
PY
for b in redis redis-fair; do
    "$bin" bench --backend "$b" --contenders 1,8 --duration 5s --warmup 1s --json | python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["results"]))'
done >"$redis_json"
python3 - "$redis_json" <<'PY'
import json, sys
rows = [r for line in open(sys.argv[1]) for r in json.loads(line)]
for name in ["redis", "redis-fair"]:
    one = next(r for r in rows if r["backend"] == name and r["contenders"] == 1)
    eight = next(r for r in rows if r["backend"] == name and r["contenders"] == 8)
    alone, handoff = one["acquire_us"]["p50"], eight["handoff_us"]["p50"]
    print(f"{name}, 8 contenders: Jain {eight['fairness_jain']:.3f} (fair queue's target 0.95), "
          f"handoff P50 {handoff:,.0f} us against the uncontended acquire P50 {alone:.0f} us "
          f"({handoff / alone:.1f}x), {eight['requests_per_grant']:.2f} requests per grant, "
          f"{eight['throughput_per_s']:,.0f} grants/s")
PY
"$bin" bench --backend memory --contenders 1,16 --duration 3s --warmup 500ms --json >"$redis_json"
python3 - "$redis_json" <<'PY'
import json, sys
for r in json.load(open(sys.argv[1]))["results"]:
    print(f"memory, {r['contenders']} contenders: {r['throughput_per_s'] / 1e6:.2f} M cycles/s (the harness alone)")
PY
"$bin" simulate bench/peers/three-step-lognormal.toml --replays 100000 --seed 1 --json >"$redis_json"
python3 - "$redis_json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(f"simulate, 100,000 replays of three lognormal steps x 1,800 items: {d['samples_per_s'] / 1e6:.0f} M samples/s")
PY
