#!/bin/sh
# Auggie (`auggie --print`, one-shot) with the server given on the command line as its
# one MCP server (`--mcp-config` JSON), HOME and the workspace in a fresh folder, then
# this becomes auggie (exec), so the host the check ends is auggie itself.
# Usage: AUGGIE=/path/to/auggie auggie_host.sh CMD ARGS...
set -eu
dir=$(mktemp -d)
cfg=$(python3 -c 'import json, sys; print(json.dumps({"mcpServers": {"rec": {
    "command": sys.argv[1], "args": sys.argv[2:]}}}))' "$@")
export HOME="$dir" XDG_CONFIG_HOME="$dir/.config" XDG_DATA_HOME="$dir/.local/share" \
    XDG_STATE_HOME="$dir/.local/state" XDG_CACHE_HOME="$dir/.cache"
cd "$dir"
exec "${AUGGIE:-auggie}" --print "say hi" --workspace-root "$dir" --mcp-config "$cfg" \
    < /dev/null
