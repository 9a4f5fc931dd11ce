# Sourced (bash) by tests/browser/run.sh and tests/e2e/run.sh: the daemon
# binary they test and the Debian packages they need.

# need_daemon_bin ROOT: exports RMQCOORD_BIN (default ROOT/build/rmqcoord; a
# relative path is taken from ROOT); exits 2 when it is not an executable.
need_daemon_bin() {
  export RMQCOORD_BIN="${RMQCOORD_BIN:-$1/build/rmqcoord}"
  case "$RMQCOORD_BIN" in
    /*) ;;
    *) RMQCOORD_BIN="$1/$RMQCOORD_BIN" ;;
  esac
  if [ ! -x "$RMQCOORD_BIN" ]; then
    echo "run.sh: daemon binary not found or not executable: $RMQCOORD_BIN (build it, or set RMQCOORD_BIN)" >&2
    exit 2
  fi
}

# apt_install PACKAGE...: Debian packages, through sudo unless root.
apt_install() {
  local sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y --no-install-recommends "$@"
}

# need_node: Debian's nodejs + npm, only when either is missing.
need_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "run.sh: node/npm not found; installing Debian nodejs + npm" >&2
    apt_install nodejs npm
  fi
}
