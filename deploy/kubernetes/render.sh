#!/usr/bin/env bash
# Renders the Kubernetes recipe for one run, with its run id and (for the bench shards) their
# common start time filled in, as one stream for `kubectl apply -f -`:
#
#   deploy/kubernetes/render.sh setup | kubectl apply -f -              # the volume and the config
#   deploy/kubernetes/render.sh ttl --run-id nightly-42 | kubectl apply -f -
#   kubectl wait --for=condition=complete job/lockbench-ttl-nightly-42 --timeout=1h
#   deploy/kubernetes/render.sh merge --run-id nightly-42 | kubectl apply -f -
#   deploy/kubernetes/render.sh bench --run-id redis-7 --start-in 10m | kubectl apply -f -
#   deploy/kubernetes/render.sh all --out rendered/          # every manifest, one file each
#
# What: setup (pvc, configmap), ttl, bench, merge, or all (those and the example secret).
# --run-id ID     the run every shard names and the merge Job merges (default: lockbench-UTC
#                 timestamp; printed on stderr); lower-case letters, digits and '-', at most 40
#                 characters (it goes into Job names and labels). One id per ttl or bench run.
# --start-in D    when the bench shards start measuring, from now: a duration of s, m or h
#                 (default 5m: every pod must be scheduled, pulled and connected by then)
# --start-at T    the same as an RFC 3339 UTC time (YYYY-MM-DDTHH:MM:SSZ)
# --out DIR       one rendered file per manifest in DIR instead of one stream on stdout
#
# Placeholders in the manifests: @RUN_ID@ and @START_AT@. Nothing else is changed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

fail() { printf 'render.sh: %s\n' "$*" >&2; exit 2; }

[ $# -ge 1 ] || fail "expected what to render: setup, ttl, bench, merge or all (--help says more)"
what=$1
shift
case $what in
    setup) manifests=(pvc.yaml configmap.yaml) ;;
    ttl) manifests=(ttl-job.yaml) ;;
    bench) manifests=(bench-job.yaml) ;;
    merge) manifests=(merge-job.yaml) ;;
    all) manifests=(pvc.yaml configmap.yaml secret.example.yaml ttl-job.yaml bench-job.yaml merge-job.yaml) ;;
    -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) fail "expected what to render first: setup, ttl, bench, merge or all, got \"$what\"" ;;
esac
run_id="lockbench-$(date -u +%Y%m%d-%H%M%S)"
start_in=5m
start_at=
out=
while [ $# -gt 0 ]; do
    case $1 in
        --run-id) [ $# -ge 2 ] || fail "--run-id: expected an id"; run_id=$2; shift 2 ;;
        --start-in) [ $# -ge 2 ] || fail "--start-in: expected a duration like 5m"; start_in=$2; start_at=; shift 2 ;;
        --start-at) [ $# -ge 2 ] || fail "--start-at: expected a time like 2027-01-05T03:00:00Z"; start_at=$2; shift 2 ;;
        --out) [ $# -ge 2 ] || fail "--out: expected a directory"; out=$2; shift 2 ;;
        -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) fail "unknown argument $1; expected --run-id, --start-in, --start-at or --out" ;;
    esac
done

[[ $run_id =~ ^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$ ]] \
    || fail "--run-id: expected lower-case letters, digits and '-' (not at either end), at most 40 characters, got \"$run_id\""
if [ -z "$start_at" ]; then
    [[ $start_in =~ ^([0-9]+)([smh])$ ]] || fail "--start-in: expected a whole number of s, m or h, like 5m, got \"$start_in\""
    seconds=${BASH_REMATCH[1]}
    case ${BASH_REMATCH[2]} in m) seconds=$((seconds * 60)) ;; h) seconds=$((seconds * 3600)) ;; esac
    [ "$seconds" -ge 60 ] || fail "--start-in: expected at least 1m: every pod must be scheduled and connected first"
    start_at=$(date -u -d "@$(($(date -u +%s) + seconds))" +%Y-%m-%dT%H:%M:%SZ)
else
    [[ $start_at =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$ ]] \
        || fail "--start-at: expected an RFC 3339 UTC time like 2027-01-05T03:00:00Z, got \"$start_at\""
fi

render() { sed -e "s/@RUN_ID@/$run_id/g" -e "s/@START_AT@/$start_at/g" "$1"; }

if [ -n "$out" ]; then
    mkdir -p "$out"
    for m in "${manifests[@]}"; do render "$here/$m" > "$out/$m"; done
    printf 'render.sh: run %s, bench start %s: %s\n' "$run_id" "$start_at" "$out" >&2
else
    first=1
    for m in "${manifests[@]}"; do
        [ $first -eq 1 ] || printf -- '---\n'
        first=0
        render "$here/$m"
    done
    printf 'render.sh: run %s, bench start %s\n' "$run_id" "$start_at" >&2
fi
