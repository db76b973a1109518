#!/usr/bin/env bash
# Installs what the real-VS-Code end-to-end test needs, idempotently (fast when already there):
#   - Debian packages: chromium (the workbench client), ripgrep (replaces @vscode/ripgrep's GitHub
#     download), build-essential + python3 + libkrb5-dev (native modules of code-server), ca-certificates
#   - code-server 4.99.4 (= VS Code 1.99.3) and playwright-core from npm, into $OH_E2E_DIR
#     (default: <repo>/.e2e), never into the repository's node_modules.
#
#   bash extension/e2e/setup.sh            # SKIP_APT=1 to skip the apt step (e.g. not root)
#
# Only loopback + package registries are reachable in CI, hence the workarounds below (each one was a
# real failure on these machines).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
E2E_DIR="${OH_E2E_DIR:-$repo/.e2e}"
CS_VERSION="${CS_VERSION:-4.99.4}"   # bundles VS Code 1.99.3; needs node 20 exactly
PW_VERSION="${PW_VERSION:-1.65.1}"   # playwright-core only: it drives Debian's chromium, downloads no browser
mkdir -p "$E2E_DIR"
say() { printf 'e2e-setup: %s\n' "$*"; }

# ------------------------------------------------------------------ 1. Debian packages
APT_PKGS=(build-essential python3 libkrb5-dev ripgrep chromium ca-certificates git zsh bubblewrap openssh-server openssh-client iproute2 util-linux)
# git: branch mode (VS Code's Git extension runs it); zsh: the shell engine battery (issue 17); bubblewrap: the
# agent shell's sandbox (issue 27); openssh-server/client: `oh share ssh` against a real sshd (issue 28);
# iproute2/util-linux: network namespaces (unshare) for agents with no route to the host's loopback (issue 28)
if [ "${SKIP_APT:-0}" != 1 ]; then
  missing=()
  for p in "${APT_PKGS[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    say "apt-get install ${missing[*]}"
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi
[ -x /usr/bin/chromium ] || { say "missing /usr/bin/chromium"; exit 1; }
[ "$(node -p 'process.versions.node.split(".")[0]')" = 20 ] || { say "code-server $CS_VERSION needs node 20"; exit 1; }
[ -f /usr/include/node/node.h ] || { say "need node headers in /usr/include/node (npm_config_nodedir=/usr)"; exit 1; }

# ------------------------------------------------------------------ 2. code-server
CS_ROOT="$E2E_DIR/code-server"
VS="$CS_ROOT/node_modules/code-server/lib/vscode/node_modules"
NATIVE=(node-pty/build/Release/pty.node @vscode/spdlog/build/Release/spdlog.node
        kerberos/build/Release/kerberos.node native-watchdog/build/Release/watchdog.node @vscode/ripgrep/bin/rg)
cs_ok() {
  [ "$(node -p "try{require('$CS_ROOT/node_modules/code-server/package.json').version}catch(e){''}")" = "$CS_VERSION" ] || return 1
  for f in "${NATIVE[@]}"; do [ -e "$VS/$f" ] || return 1; done
}
if ! cs_ok; then
  say "npm install code-server@$CS_VERSION (takes 1-2 minutes on 2 cores)"
  # @vscode/ripgrep's postinstall downloads rg from GitHub (unreachable). It first looks in
  # os.tmpdir()/vscode-ripgrep-cache-<version>/<asset>: seed that cache with Debian's rg.
  rg_cache="$(node -p 'require("os").tmpdir()')/vscode-ripgrep-cache-1.15.11"
  mkdir -p "$rg_cache" "$E2E_DIR/rgstage"
  cp /usr/bin/rg "$E2E_DIR/rgstage/rg"
  tar -C "$E2E_DIR/rgstage" -czf "$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" rg
  rm -rf "$CS_ROOT"; mkdir -p "$CS_ROOT"
  echo '{"name":"oh-e2e-code-server","private":true}' > "$CS_ROOT/package.json"
  # unsafe_perm: code-server's postinstall refuses root otherwise. nodedir=/usr: node-gyp uses the
  # local headers instead of downloading them. yes=true: node-pty's postinstall runs `npx node-gyp`,
  # which aborts when a user .npmrc says yes=false.
  ( cd "$CS_ROOT" && env npm_config_unsafe_perm=true npm_config_nodedir=/usr npm_config_yes=true \
      JOBS="$(nproc)" npm_config_cache="$E2E_DIR/npm-cache" \
      npm install --foreground-scripts --no-audit --no-fund "code-server@$CS_VERSION" ) \
      > "$E2E_DIR/code-server-install.log" 2>&1 \
    || { tail -50 "$E2E_DIR/code-server-install.log"; exit 1; }
  cs_ok || { say "code-server installed but native modules are missing; see $E2E_DIR/code-server-install.log"; exit 1; }
fi

# ------------------------------------------------------------------ 3. playwright-core
PW_ROOT="$E2E_DIR/pw"
if [ "$(node -p "try{require('$PW_ROOT/node_modules/playwright-core/package.json').version}catch(e){''}")" != "$PW_VERSION" ]; then
  say "npm install playwright-core@$PW_VERSION"
  mkdir -p "$PW_ROOT"
  echo '{"name":"oh-e2e-pw","private":true}' > "$PW_ROOT/package.json"
  ( cd "$PW_ROOT" && npm install --no-audit --no-fund --cache "$E2E_DIR/npm-cache" "playwright-core@$PW_VERSION" ) \
    > "$E2E_DIR/pw-install.log" 2>&1 || { tail -30 "$E2E_DIR/pw-install.log"; exit 1; }
fi

say "ready: code-server $CS_VERSION in $CS_ROOT, playwright-core $PW_VERSION in $PW_ROOT"
