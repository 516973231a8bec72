#!/usr/bin/env bash
# Installs the Claude Code CLI that tests/harness drives, at the version pinned
# in tests/harness/claude-code-version, from the npm registry into a cache
# outside the repository (~/.cache/memflow/claude-code/<version>; override the
# base with MEMFLOW_CLAUDE_CODE_CACHE). An installed copy is kept. Prints the
# path of the `claude` executable on stdout.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="$(tr -d '[:space:]' <"$here/claude-code-version")"
cache="${MEMFLOW_CLAUDE_CODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/memflow/claude-code}"
prefix="$cache/$version"
claude="$prefix/node_modules/.bin/claude"

if [ -x "$claude" ] && "$claude" --version 2>/dev/null | grep -q "^$version "; then
  echo "$claude"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "install_claude_code.sh: npm is needed (Debian: apt-get install npm)" >&2
  exit 1
fi
echo "== installing @anthropic-ai/claude-code@$version into $prefix" >&2
mkdir -p "$prefix"
# Its postinstall copies the platform's native binary over bin/claude.exe.
npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
  "@anthropic-ai/claude-code@$version" >&2
installed="$("$claude" --version)"
case "$installed" in
  "$version "*) echo "$claude" ;;
  *) echo "install_claude_code.sh: $claude says '$installed', not $version" >&2; exit 1 ;;
esac
