#!/bin/sh
# Cline CLI (`cline -P anthropic -k DUMMY "say hi"`) with the server given on the command
# line as its one MCP server: the settings go to a fresh file named by
# CLINE_MCP_SETTINGS_PATH (the CLI's own override of ~/.cline/data/settings/
# cline_mcp_settings.json), HOME to a fresh folder, then this becomes cline (exec) with
# stdin from /dev/null: with a pipe there, cline reads it as more prompt and waits for
# its EOF before it starts anything (so `exit` is its own end of work here).
# Usage: CLINE=/path/to/cline cline_cli.sh CMD ARGS...
set -eu
dir=$(mktemp -d)
python3 -c 'import json, sys; print(json.dumps({"mcpServers": {"rec": {
    "command": sys.argv[1], "args": sys.argv[2:]}}}))' "$@" > "$dir/cline_mcp_settings.json"
export CLINE_MCP_SETTINGS_PATH="$dir/cline_mcp_settings.json" HOME="$dir"
exec "${CLINE:-cline}" -P anthropic -k sk-ant-dummy "say hi" < /dev/null
