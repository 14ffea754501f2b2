# Shared helpers for lockbench's scripts; sourced, not run.

say() { printf '%s\n' "$*" >&2; }
die() { printf 'error: %s\n' "$*" >&2; exit 1; }
# bad_input MESSAGE: a wrong argument; exit code 2, as lockbench's own.
bad_input() { printf 'error: %s\n' "$*" >&2; exit 2; }

# require_toolchain: cargo must be on PATH (rustup's ~/.cargo/bin included).
require_toolchain() {
    if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
        export PATH="$HOME/.cargo/bin:$PATH"
    fi
    command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (stable, 1.95 or newer) with rustup from rustup.rs, then rerun"
    command -v cc >/dev/null 2>&1 || ensure_packages build-essential
}

# ensure_packages PKG...: installs missing Debian packages with apt-get when root; otherwise
# names them and stops.
ensure_packages() {
    local missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        die "missing Debian packages: ${missing[*]}; install them with: sudo apt-get install -y ${missing[*]}"
    fi
    command -v apt-get >/dev/null 2>&1 || die "missing packages ${missing[*]} and no apt-get to install them"
    say "installing ${missing[*]} (apt-get)"
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null 2>&1; then
        apt-get update -qq >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
            || die "apt-get could not install ${missing[*]}"
    fi
}

# config_ports BACKEND [FILE]: the ports of BACKEND's URLs in the backend config (default
# lockbench.toml at the repository root), one a line. The config is the one place the local
# servers' ports are written: services.sh starts them there, the tests and lockbench read them.
config_ports() {
    local file=${2:-lockbench.toml}
    [ -f "$file" ] || die "no backend config at $file"
    awk -v want="[backends.$1]" '
        /^[[:space:]]*\[/ { on = ($1 == want); next }
        on {
            line = $0
            while (match(line, /"([a-z]+:\/\/)?[^"\/,]*:[0-9]+/)) {
                url = substr(line, RSTART, RLENGTH)
                sub(/.*:/, "", url)
                print url
                line = substr(line, RSTART + RLENGTH)
            }
        }' "$file"
}

# config_port BACKEND: its first port, or a clear error.
config_port() {
    local port
    port=$(config_ports "$1" | head -n 1)
    [ -n "$port" ] || die "lockbench.toml names no 127.0.0.1 port for [backends.$1]"
    printf '%s\n' "$port"
}

# ensure_python MODULE=PACKAGE...: a Python virtual environment of the project's own
# (target/python, removed by `cargo clean`) holding each PyPI package, its interpreter in $PY and
# its scripts in $PYBIN. The tools other people read lockbench's files with come from there: the
# HdrHistogram reader, the Kubernetes schema validator.
ensure_python() {
    local venv=target/python spec module package
    if [ ! -x "$venv/bin/python" ]; then
        command -v python3 >/dev/null 2>&1 || ensure_packages python3
        if ! python3 -m venv "$venv" >/dev/null 2>&1; then
            rm -rf "$venv"
            ensure_packages python3-venv
            python3 -m venv "$venv" || die "python3 -m venv $venv failed"
        fi
    fi
    for spec in "$@"; do
        module=${spec%%=*}
        package=${spec#*=}
        "$venv/bin/python" -c "import $module" >/dev/null 2>&1 && continue
        say "installing $package (pip, into $venv)"
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$package" \
            || die "pip could not install $package into $venv (is PyPI reachable?)"
    done
    PY="$venv/bin/python"
    PYBIN="$venv/bin"
}
