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
    command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (stable, 1.85 or newer) with rustup from rustup.rs, then rerun"
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
