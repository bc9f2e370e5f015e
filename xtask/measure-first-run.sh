#!/usr/bin/env bash
# Measures `cargo xtask run` as a new user meets it on a fresh machine: a
# fresh clone of this repository's HEAD, an empty CARGO_HOME (so every
# crate is downloaded and every tool installed again), an empty target dir
# and tools dir; only the rustup toolchain is kept. It prints the phase
# timings xtask reports, the time to the server's ready line, and the time
# of a second start (everything present). Nothing outside a temporary
# directory is touched; pass a directory to keep it.
#
#   xtask/measure-first-run.sh [WORK_DIR]
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d /tmp/glassbox-first-run.XXXXXX)}
mkdir -p "$work"
cargo_bin=$(rustup which cargo)
toolchain_bin=$(dirname "$cargo_bin")

export CARGO_HOME="$work/cargo-home"
export GLASSBOX_TOOLS_DIR="$work/tools"
# The toolchain first, and no other cargo bin dir: tools installed there
# earlier must not count as present.
clean_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -x -e "$HOME/.cargo/bin" -e "${OLD_CARGO_HOME:-/nonexistent}/bin" | paste -sd: -)
mkdir -p "$work/rustup-bin"
ln -sf "$(command -v rustup)" "$work/rustup-bin/rustup"
export PATH="$toolchain_bin:$CARGO_HOME/bin:$work/rustup-bin:$clean_path"
unset CARGO_TARGET_DIR RUSTC_WRAPPER || true
mkdir -p "$CARGO_HOME"

git clone -q "$repo" "$work/clone"
cd "$work/clone"
echo "measuring a first run of $(git rev-parse --short HEAD) in $work ($(nproc) cores)"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# Starts `cargo xtask run`, waits for the ready line, stops the server;
# prints the seconds it took.
start_once() {
    local log=$1 started pid
    started=$(date +%s.%N)
    "$cargo_bin" xtask run --port "$port" --data-dir "$work/data" >"$log" 2>&1 &
    pid=$!
    until grep -q "is ready at" "$log"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            echo "cargo xtask run stopped before the ready line; its output:" >&2
            tail -50 "$log" >&2
            exit 1
        fi
        sleep 0.2
    done
    local ready
    ready=$(date +%s.%N)
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    python3 -c "print(f'{$ready - $started:.1f}')"
}

first=$(start_once "$work/first-run.log")
second=$(start_once "$work/second-run.log")

echo
echo "first run, phase by phase (as xtask printed them):"
sed -n '/^phase timings:/,/total/p' "$work/first-run.log"
echo
printf 'first run to the ready line:  %6.1f s (%s min)\n' "$first" "$(python3 -c "print(f'{$first/60:.1f}')")"
printf 'second start to the ready line: %4.1f s\n' "$second"
echo "logs: $work/first-run.log, $work/second-run.log"
