#!/usr/bin/env bash
# End-to-end harness: a real VS Code (code-server 4.99.4 = VS Code 1.99.3) in headless Chromium,
# with this extension installed from its .vsix. Self-contained: needs only this repository,
# node 20, Debian packages and the npm registry.
#
#   bash extension/e2e/run.sh [PYTEST ARGS]         # setup + the whole e2e suite (pytest tests/e2e)
#   OH_HOME=H bash extension/e2e/run.sh start STATE WORKSPACE
#        # builds + installs the .vsix, starts code-server (own process group, OH_HOME and
#        # OH_VSCODE_LOG=STATE/extension.log in its environment) and drive.js (keeps the workbench
#        # open on WORKSPACE); returns once the extension is active; writes STATE/env.json
#   bash extension/e2e/run.sh stop STATE             # kills both process groups
#
# Environment: OH_E2E_DIR (install cache, default <repo>/.e2e), OH_E2E_SKIP_SETUP=1 (trust that
# setup.sh already ran), CHROMIUM (default /usr/bin/chromium), OH_E2E_TIMEOUT (seconds to wait for
# the workbench and the extension, default 150), OH_E2E_EXTENSIONS_DIR (an extensions directory the
# test already filled, e.g. by a wheel's `oh vscode install`: then no .vsix is built or installed here).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ext="$(cd "$here/.." && pwd)"
repo="$(cd "$ext/.." && pwd)"
E2E_DIR="${OH_E2E_DIR:-$repo/.e2e}"
CS="$E2E_DIR/code-server/node_modules/.bin/code-server"
PW="$E2E_DIR/pw"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
WAIT="${OH_E2E_TIMEOUT:-150}"
say() { printf 'e2e: %s\n' "$*" >&2; }

setup() {
  [ "${OH_E2E_SKIP_SETUP:-0}" = 1 ] || bash "$here/setup.sh" >&2
}

# Rebuilds the .vsix only when a source file is newer than it (packaging costs a few seconds).
build_vsix() {
  local vsix="$ext/oh-vscode.vsix"
  if [ ! -d "$ext/node_modules" ]; then
    ( cd "$ext" && npm ci --no-audit --no-fund --loglevel=error ) >&2
  fi
  if [ ! -f "$vsix" ] || [ -n "$(find "$ext/src" "$ext/package.json" -newer "$vsix" -print -quit)" ]; then
    say "packaging the extension"
    ( cd "$ext" && npm run -s package ) >&2
  fi
  echo "$vsix"
}

free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$end" ]; then say "timed out after ${limit}s waiting for $what"; return 1; fi
    sleep 0.25
  done
}

start() {
  local state=$1 ws=$2
  [ -n "${OH_HOME:-}" ] || { say "OH_HOME must be set (it is passed to code-server's environment)"; exit 2; }
  setup
  [ -x "$CS" ] || { say "code-server missing at $CS: run extension/e2e/setup.sh"; exit 1; }
  mkdir -p "$state"
  state="$(cd "$state" && pwd)"; ws="$(cd "$ws" && pwd)"
  rm -rf "$state/ud" "$state/exts" "$state/xdg" "$state/driver.json" "$state/env.json"
  mkdir -p "$state/ud/User" "$state/xdg"
  : > "$state/extension.log"
  # Keep code-server's config, data and logs out of $HOME.
  export XDG_CONFIG_HOME="$state/xdg/config" XDG_DATA_HOME="$state/xdg/data" XDG_CACHE_HOME="$state/xdg/cache"
  local exts="$state/exts"
  if [ -n "${OH_E2E_EXTENSIONS_DIR:-}" ]; then
    exts="$(cd "$OH_E2E_EXTENSIONS_DIR" && pwd)"
  else
    mkdir -p "$exts"
    local vsix; vsix="$(build_vsix)"
    "$CS" --user-data-dir "$state/ud" --extensions-dir "$exts" --install-extension "$vsix" > "$state/install.log" 2>&1 \
      || { cat "$state/install.log" >&2; exit 1; }
  fi
  cat > "$state/ud/User/settings.json" <<'EOF'
{
  "workbench.startupEditor": "none",
  "telemetry.telemetryLevel": "off",
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "extensions.ignoreRecommendations": true,
  "update.mode": "none",
  "workbench.enableExperiments": false,
  "security.workspace.trust.enabled": false,
  "terminal.integrated.shellIntegration.enabled": true,
  "files.autoSave": "off"
}
EOF
  local port; port="$(free_port)"
  # setsid: code-server forks ptyHost / fileWatcher / extensionHost; its own process group lets
  # `stop` kill all of them. The extension host inherits this environment (OH_HOME!).
  OH_HOME="$OH_HOME" OH_VSCODE_LOG="$state/extension.log" setsid "$CS" --bind-addr "127.0.0.1:$port" --auth none \
    --disable-telemetry --disable-update-check --disable-workspace-trust --disable-getting-started-override \
    --user-data-dir "$state/ud" --extensions-dir "$exts" "$ws" > "$state/code-server.log" 2>&1 < /dev/null &
  echo $! > "$state/code-server.pid"
  wait_for 60 "code-server on port $port" node -e "require('http').get('http://127.0.0.1:$port/healthz',r=>process.exit(r.statusCode===200?0:1)).on('error',()=>process.exit(1))" \
    || { tail -30 "$state/code-server.log" >&2; stop "$state"; exit 1; }
  CHROMIUM="$CHROMIUM" OH_E2E_PW="$PW" setsid node "$here/drive.js" --url "http://127.0.0.1:$port/?folder=$ws" --state "$state" \
    > "$state/drive.log" 2>&1 < /dev/null &
  echo $! > "$state/drive.pid"
  wait_for "$WAIT" "the workbench in Chromium" test -s "$state/driver.json" \
    || { tail -30 "$state/drive.log" >&2; stop "$state"; exit 1; }
  wait_for "$WAIT" "the extension to activate" grep -q 'oh extension .* active' "$state/extension.log" \
    || { tail -30 "$state/drive.log" "$state/code-server.log" >&2; stop "$state"; exit 1; }
  node -e '
    const [state, port, ws] = process.argv.slice(1);
    const fs = require("fs");
    const d = JSON.parse(fs.readFileSync(state + "/driver.json", "utf8"));
    const env = { code_server_port: +port, code_server_pid: +fs.readFileSync(state + "/code-server.pid", "utf8"),
      driver_pid: d.pid, control_port: d.control_port, workspace: ws, extension_log: state + "/extension.log",
      oh_home: process.env.OH_HOME };
    fs.writeFileSync(state + "/env.json", JSON.stringify(env, null, 2));
    console.log(JSON.stringify(env));' "$state" "$port" "$ws"
}

kill_group() {  # SIGTERM the process group, SIGKILL what is left after 5 s
  local pid=$1
  kill -TERM -- "-$pid" 2>/dev/null || return 0
  for _ in $(seq 1 20); do kill -0 -- "-$pid" 2>/dev/null || return 0; sleep 0.25; done
  kill -KILL -- "-$pid" 2>/dev/null || true
}

stop() {
  local state=$1
  for f in drive.pid code-server.pid; do
    [ -f "$state/$f" ] && kill_group "$(cat "$state/$f")"
    rm -f "$state/$f"
  done
}

run_all() {  # extra arguments go to pytest
  setup
  build_vsix > /dev/null
  local py="$repo/.venv/bin/python"; [ -x "$py" ] || py=python3
  cd "$repo" && OH_E2E_SKIP_SETUP=1 exec "$py" -m pytest tests/e2e -p no:cacheprovider "$@"
}

case "${1:-all}" in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  all) shift || true; run_all "$@" ;;
  -*) run_all "$@" ;;
  *) say "usage: run.sh [all] [PYTEST ARGS...] | start STATE WORKSPACE | stop STATE"; exit 2 ;;
esac
