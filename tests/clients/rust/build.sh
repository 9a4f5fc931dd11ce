#!/usr/bin/env bash
# Builds tests/clients/rust/bin/probe: rocketmq-client-rust 1.0.0 push consumers
# (crates.io, pinned in Cargo.toml and Cargo.lock; `cargo build --locked`).
# Idempotent: does nothing when bin/probe is newer than its sources.
# Heavy: about 360 crates (tokio, rustls with aws-lc-sys's C code, zstd, ...):
# 30-40 minutes on 2 busy cores from an empty cache. CARGO_TARGET_DIR is
# honoured (default ./target).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
bin="$here/bin/probe"
if [[ -x "$bin" && "${FORCE:-0}" != 1 ]]; then
  stale=0
  for f in src/main.rs Cargo.toml Cargo.lock build.sh; do [[ "$f" -nt "$bin" ]] && stale=1; done
  if [[ $stale == 0 ]]; then
    echo "rust probe: up to date ($bin)"
    exit 0
  fi
fi
command -v cargo >/dev/null || { echo "rust probe: cargo is missing" >&2; exit 1; }
target="${CARGO_TARGET_DIR:-$here/target}"
CARGO_TARGET_DIR="$target" cargo build --release --locked -j "${JOBS:-2}" --bin probe
mkdir -p bin
cp -f "$target/release/probe" "$bin.tmp"
mv -f "$bin.tmp" "$bin"
echo "rust probe: built $bin"
