#!/bin/sh
# Continue CLI (`cn -p`, headless) with the server given on the command line as its one
# MCP server. cn's config is YAML, which `--host` does not write; this writes it into a
# fresh folder, makes that folder HOME (cn keeps its state in ~/.continue: the user's
# own must never be written by a check), and then becomes cn (exec), so the host the
# check ends is cn itself. Values are written as JSON strings (valid YAML scalars).
# Usage: CN=/path/to/cn continue_cn.sh CMD ARGS...
set -eu
dir=$(mktemp -d)
python3 -c 'import json, sys
q = json.dumps
print("name: hostcheck\nversion: 0.0.1\nschema: v1")
print("models:\n  - name: dummy\n    provider: openai\n    model: gpt-4o\n    apiKey: sk-dummy")
print("mcpServers:\n  - name: rec\n    command: " + q(sys.argv[1]) + "\n    args:")
for a in sys.argv[2:]:
    print("      - " + q(a))' "$@" > "$dir/config.yaml"
export HOME="$dir" XDG_CONFIG_HOME="$dir/.config" XDG_DATA_HOME="$dir/.local/share" \
    XDG_STATE_HOME="$dir/.local/state" XDG_CACHE_HOME="$dir/.cache"
exec "${CN:-cn}" -p "say hi" --config "$dir/config.yaml"
