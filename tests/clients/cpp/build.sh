#!/usr/bin/env bash
# Builds the C++ probes of tests/clients/cpp: one virtualenv per library line,
# each from a PyPI package that ships rocketmq-client-cpp's librocketmq.so with
# a ctypes binding (pinned by hash), and a launcher per line:
#   bin/probe        rocketmq-client-cpp 2.1.0 (rocketmq-python-cvs 2.1.0.3), .venv-2
#   bin/probe-cpp1   rocketmq-client-cpp 1.x   (rocketmq 0.4.4),               .venv-1
# Idempotent: a line whose venv is newer than its requirements is left alone.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
py="${PYTHON:-python3}"
mkdir -p bin
line() { # line VENV REQUIREMENTS LAUNCHER
  local venv="$1" req="$2" launcher="bin/$3"
  if [[ "${FORCE:-0}" != 1 && -f "$venv/.installed" && -x "$launcher" \
        && ! "$req" -nt "$venv/.installed" && ! build.sh -nt "$venv/.installed" ]]; then
    echo "cpp probe: up to date ($here/$launcher)"
    return
  fi
  rm -rf "$venv"
  "$py" -m venv "$venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --require-hashes -r "$req"
  "$venv/bin/python" -c 'import rocketmq.client' # loads librocketmq.so
  cat > "$launcher.tmp" <<LAUNCH
#!/bin/sh
here="\$(cd "\$(dirname "\$0")/.." && pwd)"
exec "\$here/$venv/bin/python" "\$here/probe.py" "\$@"
LAUNCH
  chmod +x "$launcher.tmp"
  mv -f "$launcher.tmp" "$launcher"
  touch "$venv/.installed"
  echo "cpp probe: built $here/$launcher"
}
line .venv-2 requirements-2.txt probe
line .venv-1 requirements-1.txt probe-cpp1
