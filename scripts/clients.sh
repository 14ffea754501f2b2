#!/usr/bin/env bash
# The real lock client libraries lockbench's adapters drive (docs/CLIENTS.md), pinned and
# installed under target/clients/. Safe to run again: what is installed and matches its pins is
# left alone.
#
#   scripts/clients.sh up       install what is missing (Debian packages via apt-get when root)
#   scripts/clients.sh status   say what is installed
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ROOT=target/clients
PYENV=$ROOT/python
PYREQ=clients/adapters/python/requirements.txt

pins() { grep -v "^#" "$PYREQ" | paste -sd " "; }

# python_up: a virtual environment with exactly the pinned versions of requirements.txt. The
# stamp is the requirements file itself: a changed pin reinstalls.
python_up() {
    local start=$SECONDS
    if [ -x "$PYENV/bin/python" ] && cmp -s "$PYREQ" "$PYENV/.installed" 2>/dev/null; then
        say "clients: Python libraries installed ($(pins))"
        return 0
    fi
    if [ ! -x "$PYENV/bin/python" ]; then
        mkdir -p "$ROOT"
        if ! python3 -m venv "$PYENV" >/dev/null 2>&1; then
            rm -rf "$PYENV"
            ensure_packages python3-venv
            python3 -m venv "$PYENV" || die "python3 -m venv $PYENV failed"
        fi
    fi
    say "clients: installing $(pins) (pip, into $PYENV)"
    "$PYENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$PYREQ" \
        || die "pip could not install $PYREQ into $PYENV (is PyPI reachable?)"
    cp "$PYREQ" "$PYENV/.installed"
    say "clients: Python libraries installed in $((SECONDS - start)) s"
}

python_status() {
    if [ -x "$PYENV/bin/python" ] && cmp -s "$PYREQ" "$PYENV/.installed" 2>/dev/null; then
        echo "python: installed in $PYENV ($(pins))"
    else
        echo "python: not installed (scripts/clients.sh up)"
    fi
}

case "${1:-}" in
    up) python_up ;;
    status) python_status ;;
    *) bad_input "usage: scripts/clients.sh up|status" ;;
esac
