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
    command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (stable, 1.88 or newer) with rustup from rustup.rs, then rerun"
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
