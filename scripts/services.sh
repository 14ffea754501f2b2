#!/usr/bin/env bash
# Local lock backends on loopback, for the tests, the benchmark and the quick start.
#
#   scripts/services.sh up       install what is missing, start everything that is not running
#   scripts/services.sh down     stop everything this script started
#   scripts/services.sh status   one line per service with its URL
#
# Private instances on the ports lockbench.toml names (the one place they are written; chosen not
# to collide with a system install), etcd's peer port one above its client port.
# State lives in LOCKBENCH_STATE (default /var/tmp/lockbench-services as root, else
# ~/.local/state/lockbench). Idempotent: `up` twice starts nothing twice.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

if [ "$(id -u)" -eq 0 ]; then
    STATE=${LOCKBENCH_STATE:-/var/tmp/lockbench-services}
else
    STATE=${LOCKBENCH_STATE:-${XDG_STATE_HOME:-$HOME/.local/state}/lockbench}
fi
REDIS_PORT=$(config_port redis)
REDLOCK_PORTS=$(config_ports redlock | tr '\n' ' ')
PG_PORT=$(config_port pg-session)
ETCD_PORT=$(config_port etcd)
ETCD_PEER_PORT=$((ETCD_PORT + 1))
ZK_PORT=$(config_port zookeeper)
PGB_TX_PORT=$(config_ports pg-session deploy/poolers/pgbouncer-transaction.toml | head -n 1)
PGB_SESSION_PORT=$(config_ports pg-session deploy/poolers/pgbouncer-session.toml | head -n 1)
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
WAIT_SECONDS=60

port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# wait_for NAME PORT LOG: bounded wait for a port to accept connections.
wait_for() {
    local name=$1 port=$2 log=$3 i
    for ((i = 0; i < WAIT_SECONDS * 4; i++)); do
        port_open "$port" && return 0
        sleep 0.25
    done
    say "$name did not start on 127.0.0.1:$port within ${WAIT_SECONDS}s; last lines of $log:"
    tail -n 20 "$log" >&2 2>/dev/null || true
    exit 1
}

install() {
    # iproute2 and nftables: the fault lab's partitions (a network namespace of its own).
    ensure_packages redis-server redis-tools postgresql etcd-server etcd-client zookeeper protobuf-compiler \
        iproute2 nftables pgbouncer
    [ -n "$PG_BIN" ] || PG_BIN=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
}

as_postgres() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

redis_up() {
    local port=$1
    if redis-cli -p "$port" ping >/dev/null 2>&1; then return 0; fi
    mkdir -p "$STATE/redis-$port"
    redis-server --daemonize yes --bind 127.0.0.1 --port "$port" --save "" --appendonly no \
        --dir "$STATE/redis-$port" --logfile "$STATE/redis-$port.log" \
        --pidfile "$STATE/redis-$port.pid" >/dev/null
    wait_for "redis:$port" "$port" "$STATE/redis-$port.log"
}

postgres_up() {
    if port_open "$PG_PORT"; then return 0; fi
    # The socket and the log live in a folder postgres owns: the server runs as postgres.
    local data="$STATE/pg" sock="$STATE/pgrun"
    mkdir -p "$STATE" "$sock"
    if [ "$(id -u)" -eq 0 ]; then
        chmod 755 "$STATE"
        chown postgres:postgres "$sock"
        [ -d "$data" ] && chown -R postgres:postgres "$data"
    fi
    if [ ! -s "$data/PG_VERSION" ]; then
        mkdir -p "$data"
        [ "$(id -u)" -eq 0 ] && chown postgres:postgres "$data"
        as_postgres "$PG_BIN/initdb" -D "$data" -A trust -U postgres >"$STATE/initdb.log" 2>&1 \
            || { tail -n 20 "$STATE/initdb.log" >&2; die "initdb failed"; }
    fi
    rm -f "$data/postmaster.pid"
    as_postgres "$PG_BIN/pg_ctl" -D "$data" -l "$sock/pg.log" -w -t "$WAIT_SECONDS" \
        -o "-p $PG_PORT -k $sock -c listen_addresses=127.0.0.1 -c max_connections=200" start >/dev/null \
        || { tail -n 20 "$sock/pg.log" >&2; die "postgres did not start"; }
    wait_for postgres "$PG_PORT" "$sock/pg.log"
}

# Extensive metrics: the server's own time per call (grpc_server_handling_seconds), which
# scripts/bench-peers.sh shows beside lockbench's handoff figures. Compacted every minute, as a
# production etcd is: otherwise every revision of every lock key a bench makes (thousands a
# second) stays in its store and index for good.
etcd_up() {
    if port_open "$ETCD_PORT"; then return 0; fi
    mkdir -p "$STATE"
    nohup etcd --name lockbench --data-dir "$STATE/etcd" \
        --listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
        --listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
        --initial-cluster "lockbench=http://127.0.0.1:$ETCD_PEER_PORT" \
        --metrics extensive --auto-compaction-mode periodic --auto-compaction-retention 1m \
        >"$STATE/etcd.log" 2>&1 &
    echo $! >"$STATE/etcd.pid"
    wait_for etcd "$ETCD_PORT" "$STATE/etcd.log"
}

zookeeper_up() {
    if port_open "$ZK_PORT"; then return 0; fi
    local conf="$STATE/zk-conf"
    mkdir -p "$conf" "$STATE/zk"
    cat >"$conf/zoo.cfg" <<CFG
tickTime=2000
dataDir=$STATE/zk
clientPort=$ZK_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
maxSessionTimeout=120000
# One session per bench contender, all from 127.0.0.1: the default cap of 60 per address would
# refuse a 64-contender level.
maxClientCnxns=200
CFG
    cat >"$conf/log4j.properties" <<'CFG'
log4j.rootLogger=WARN, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
CFG
    local cp="$conf:/usr/share/java/zookeeper.jar"
    nohup java -Xmx256m -cp "$cp" org.apache.zookeeper.server.ZooKeeperServerMain "$conf/zoo.cfg" \
        >"$STATE/zookeeper.log" 2>&1 &
    echo $! >"$STATE/zookeeper.pid"
    wait_for zookeeper "$ZK_PORT" "$STATE/zookeeper.log"
}

# pgbouncer_up MODE PORT: PgBouncer in MODE (transaction or session) in front of the local
# Postgres, as the postgres user (PgBouncer refuses root), any user name let through as postgres.
pgbouncer_up() {
    local mode=$1 port=$2 dir="$STATE/pgbouncer-$1"
    if port_open "$port"; then return 0; fi
    mkdir -p "$dir"
    cat >"$dir/pgbouncer.ini" <<CFG
[databases]
* = host=127.0.0.1 port=$PG_PORT user=postgres

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $port
unix_socket_dir =
auth_type = any
pool_mode = $mode
max_client_conn = 500
default_pool_size = 20
ignore_startup_parameters = extra_float_digits,options
logfile = $dir/pgbouncer.log
pidfile = $dir/pgbouncer.pid
CFG
    [ "$(id -u)" -eq 0 ] && chown -R postgres:postgres "$dir"
    as_postgres /usr/sbin/pgbouncer -d "$dir/pgbouncer.ini" >"$dir/stdout.log" 2>&1 \
        || { tail -n 20 "$dir/stdout.log" >&2; die "pgbouncer ($mode) did not start"; }
    wait_for "pgbouncer ($mode)" "$port" "$dir/pgbouncer.log"
}

stop_pid() {
    local file="$STATE/$1.pid"
    [ -f "$file" ] || return 0
    kill "$(cat "$file")" 2>/dev/null || true
    rm -f "$file"
}

up() {
    install
    redis_up "$REDIS_PORT"
    for port in $REDLOCK_PORTS; do redis_up "$port"; done
    postgres_up
    etcd_up
    zookeeper_up
    pgbouncer_up transaction "$PGB_TX_PORT"
    pgbouncer_up session "$PGB_SESSION_PORT"
    status
}

down() {
    for port in $REDIS_PORT $REDLOCK_PORTS; do
        redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
    done
    if [ -n "$PG_BIN" ] && [ -s "$STATE/pg/PG_VERSION" ]; then
        as_postgres "$PG_BIN/pg_ctl" -D "$STATE/pg" -m fast stop >/dev/null 2>&1 || true
    fi
    stop_pid etcd
    stop_pid zookeeper
    stop_pid pgbouncer-transaction/pgbouncer
    stop_pid pgbouncer-session/pgbouncer
    say "stopped (state kept in $STATE)"
}

status() {
    local failed=0 line
    report() {
        if port_open "$2"; then line="up  "; else line="DOWN"; failed=1; fi
        printf '%-10s %s  %s\n' "$1" "$line" "$3"
    }
    report redis "$REDIS_PORT" "redis://127.0.0.1:$REDIS_PORT"
    for port in $REDLOCK_PORTS; do report redlock "$port" "redis://127.0.0.1:$port"; done
    report postgres "$PG_PORT" "postgres://postgres@127.0.0.1:$PG_PORT/postgres"
    report etcd "$ETCD_PORT" "http://127.0.0.1:$ETCD_PORT"
    report zookeeper "$ZK_PORT" "127.0.0.1:$ZK_PORT"
    report pgbouncer "$PGB_TX_PORT" "postgres://postgres@127.0.0.1:$PGB_TX_PORT/postgres (transaction mode)"
    report pgbouncer "$PGB_SESSION_PORT" "postgres://postgres@127.0.0.1:$PGB_SESSION_PORT/postgres (session mode)"
    return $failed
}

case "${1:-}" in
    up) up ;;
    down) down ;;
    status) status ;;
    *) bad_input "usage: scripts/services.sh up | down | status" ;;
esac
