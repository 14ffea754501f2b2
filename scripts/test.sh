#!/usr/bin/env bash
# The test command (README command 2, and what CI runs): formatting, lints, then every test of the
# workspace in one build. Installs what it needs; safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

require_toolchain

say "== cargo fmt --check"
cargo fmt --all -- --check
say "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --quiet -- -D warnings
say "== cargo test"
cargo test --workspace
