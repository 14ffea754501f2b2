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
NODE_DIR=$ROOT/node
NODE_LOCK=clients/adapters/node/package-lock.json
GO_DIR=$ROOT/go
GO_PINS=clients/adapters/go/debian-pins.txt
JAVA_DIR=$ROOT/java
JAVA_PINS=clients/adapters/java/debian-pins.txt
# The class path of the Curator adapter: Debian's jars (zookeeper-jute and netty are needed at
# connect, jackson reads and writes the protocol's JSON, slf4j-simple prints warnings to stderr).
JAVA_JARS="curator-recipes curator-framework curator-client zookeeper zookeeper-jute guava slf4j-api slf4j-simple netty-all jackson-databind jackson-core jackson-annotations"

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

# debian_pinned PINFILE: installs the packages PINFILE pins and fails in one line when Debian
# installed another version than the pin.
debian_pinned() {
    local pins=$1 line pkg want have
    # shellcheck disable=SC2046
    ensure_packages $(grep -v "^#" "$pins" | cut -d= -f1)
    while IFS= read -r line; do
        case "$line" in "#"* | "") continue ;; esac
        pkg=${line%%==*}
        want=${line#*==}
        have=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null)
        [ "$have" = "$want" ] \
            || die "$pkg is $have here but $pins pins $want: pin what you measure (edit $pins), then run scripts/clients.sh up"
    done <"$pins"
}

# node_up: npm ci of the committed lock file into target/clients/node. The stamp is the lock
# file itself.
node_up() {
    local start=$SECONDS
    if [ -d "$NODE_DIR/node_modules" ] && cmp -s "$NODE_LOCK" "$NODE_DIR/.installed" 2>/dev/null; then
        say "clients: Node libraries installed ($(node_pins))"
        return 0
    fi
    command -v npm >/dev/null 2>&1 || ensure_packages nodejs npm
    mkdir -p "$NODE_DIR"
    cp clients/adapters/node/package.json "$NODE_LOCK" "$NODE_DIR/"
    say "clients: installing $(node_pins) (npm ci, into $NODE_DIR)"
    (cd "$NODE_DIR" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error >/dev/null) \
        || die "npm could not install $NODE_LOCK into $NODE_DIR (is the npm registry reachable?)"
    cp "$NODE_LOCK" "$NODE_DIR/.installed"
    say "clients: Node libraries installed in $((SECONDS - start)) s"
}

# node_pins: the pinned packages and their versions, from the lock file.
node_pins() {
    node -e 'const lock = require(process.argv[1]); const deps = require(process.argv[2]).dependencies;
             console.log(Object.keys(deps).map((p) => p + "@" + lock.packages["node_modules/" + p].version).join(" "))' \
        "$PWD/$NODE_LOCK" "$PWD/clients/adapters/node/package.json"
}

# go_up: the etcd adapter, built with Debian's Go against Debian's etcd sources (GOPATH mode:
# no module download). Rebuilt when its source is newer than the binary or the pin changed.
go_up() {
    local start=$SECONDS src=clients/adapters/go/etcd_go.go bin=$GO_DIR/etcd_go
    if [ -x "$bin" ] && [ ! "$src" -nt "$bin" ] && cmp -s "$GO_PINS" "$GO_DIR/.installed" 2>/dev/null; then
        say "clients: Go adapter built ($(grep -v "^#" "$GO_PINS" | paste -sd " "))"
        return 0
    fi
    ensure_packages golang-go
    debian_pinned "$GO_PINS"
    mkdir -p "$GO_DIR"
    say "clients: building $src (go build, GOPATH=/usr/share/gocode)"
    GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$PWD/$GO_DIR/cache" GOFLAGS= \
        go build -o "$bin.new" "$src" || die "go build of $src failed"
    mv "$bin.new" "$bin"
    cp "$GO_PINS" "$GO_DIR/.installed"
    say "clients: Go adapter built in $((SECONDS - start)) s"
}

# java_up: the Curator adapter, compiled with the JDK against Debian's jars, and a launcher
# that runs it with its class path.
java_up() {
    local start=$SECONDS src=clients/adapters/java/CuratorLock.java launcher=$JAVA_DIR/CuratorLock
    if [ -x "$launcher" ] && [ ! "$src" -nt "$launcher" ] && cmp -s "$JAVA_PINS" "$JAVA_DIR/.installed" 2>/dev/null; then
        say "clients: Java adapter built ($(grep -v "^#" "$JAVA_PINS" | paste -sd " "))"
        return 0
    fi
    command -v javac >/dev/null 2>&1 || ensure_packages openjdk-17-jdk-headless
    ensure_packages libjackson2-databind-java libslf4j-java
    debian_pinned "$JAVA_PINS"
    local cp="" jar
    for jar in $JAVA_JARS; do
        [ -f "/usr/share/java/$jar.jar" ] || die "/usr/share/java/$jar.jar is missing (its Debian package is not installed)"
        cp="$cp:/usr/share/java/$jar.jar"
    done
    rm -rf "${JAVA_DIR:?}/classes"
    mkdir -p "$JAVA_DIR/classes"
    say "clients: compiling $src (javac)"
    javac -Xlint:all,-path -Werror -cp "${cp#:}" -d "$JAVA_DIR/classes" "$src" || die "javac of $src failed"
    {
        echo '#!/bin/sh'
        echo '# Written by scripts/clients.sh: the Curator adapter with its class path. slf4j-simple'
        echo "# prints Curator's and ZooKeeper's warnings to stderr, never stdout."
        echo "exec java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp \"$PWD/$JAVA_DIR/classes$cp\" CuratorLock \"\$@\""
    } >"$launcher.new"
    chmod +x "$launcher.new"
    mv "$launcher.new" "$launcher"
    cp "$JAVA_PINS" "$JAVA_DIR/.installed"
    say "clients: Java adapter built in $((SECONDS - start)) s"
}

# stamped NAME PINS DIR: one status line for a runtime stamped with its pin file.
stamped() {
    if cmp -s "$2" "$3/.installed" 2>/dev/null; then
        echo "$1: installed in $3 ($(grep -v "^#" "$2" | paste -sd " "))"
    else
        echo "$1: not installed (scripts/clients.sh up)"
    fi
}

case "${1:-}" in
    up) python_up && node_up && go_up && java_up ;;
    status)
        python_status
        if [ -d "$NODE_DIR/node_modules" ] && cmp -s "$NODE_LOCK" "$NODE_DIR/.installed" 2>/dev/null; then
            echo "node: installed in $NODE_DIR ($(node_pins))"
        else
            echo "node: not installed (scripts/clients.sh up)"
        fi
        stamped go "$GO_PINS" "$GO_DIR"
        stamped java "$JAVA_PINS" "$JAVA_DIR"
        ;;
    *) bad_input "usage: scripts/clients.sh up|status" ;;
esac
