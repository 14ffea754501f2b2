#!/usr/bin/env bash
# The test command (README command 2, and what CI runs): formatting, lints, then every test of the
# workspace in one build. Installs what it needs; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

require_toolchain
say "== local servers (the backend tests talk to real ones)"
scripts/services.sh up
say "== client libraries (the adapter tests drive real ones: docs/CLIENTS.md)"
scripts/clients.sh up
say "== promtool (Prometheus's rule checker: the record's alerting rules are tested with it)"
command -v promtool >/dev/null 2>&1 || ensure_packages prometheus
command -v promtool >/dev/null 2>&1 || die "promtool not found after installing Debian's prometheus package"

say "== cargo fmt --check"
cargo fmt --all -- --check
say "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings
say "== cargo test: build"
# Built once, before any test runs: a build that fails says so, rather than ending in a count of
# tests that never ran.
if ! cargo test --workspace --no-run --quiet; then
    say "tests: the build failed (see the errors above); no test ran"
    exit 1
fi
say "== cargo test: run"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
# One closing line for the whole workspace: cargo prints one per test binary, the last of them
# often a doc-test run with nothing in it.
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i) ~ /^passed;?$/) p += $(i-1); if ($(i) ~ /^failed;?$/) f += $(i-1) } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
[ "$status" -eq 0 ] || exit "$status"

# What lockbench writes, read by the tools people read it with, not by lockbench.
say "== other readers: HdrHistogram's Python reader, the Kubernetes schemas, promtool"
ensure_python hdrh=hdrhistogram kubernetes_validate=kubernetes-validate
"$PY" scripts/check-hlog.py results/sample analysis/tests/fixtures/run
rendered=$(mktemp -d)
trap 'rm -f "$log"; rm -rf "$rendered"' EXIT
deploy/kubernetes/render.sh all --run-id ci-check --out "$rendered" 2>/dev/null
"$PYBIN/kubernetes-validate" --quiet -k 1.31.0 --strict "$rendered"/*.yaml \
    || die "a Kubernetes manifest does not validate against the 1.31 schemas (above)"
say "manifests: $(ls "$rendered" | wc -l) valid against Kubernetes 1.31 (strict)"
# The alerting rules the committed record ships, as Prometheus's own tool checks and tests them
# (the record's tests run promtool on rebuilt rules too: tests/record.rs).
(cd results/sample/report \
    && promtool check rules prometheus-rules.yml >/dev/null \
    && promtool test rules prometheus-rules.test.yml >/dev/null) \
    || die "promtool refuses results/sample/report/prometheus-rules.yml or its tests (run them there to see why)"
say "alerting rules: promtool check rules and test rules pass on results/sample/report"
