#!/bin/sh
# Continue CLI (`cn -p`, headless) with the server given on the command line as its one
# MCP server. cn's config is YAML, which `--host` does not write; this writes it into a
# fresh folder and then becomes cn (exec), so the host the check ends is cn itself.
# Usage: CN=/path/to/cn continue_cn.sh CMD ARGS...
set -eu
dir=$(mktemp -d)
{
  printf 'name: hostcheck\nversion: 0.0.1\nschema: v1\n'
  printf 'models:\n  - name: dummy\n    provider: openai\n    model: gpt-4o\n    apiKey: sk-dummy\n'
  printf 'mcpServers:\n  - name: rec\n    command: "%s"\n    args:\n' "$1"
  shift
  for a in "$@"; do printf '      - "%s"\n' "$a"; done
} > "$dir/config.yaml"
exec "${CN:-cn}" -p "say hi" --config "$dir/config.yaml"
