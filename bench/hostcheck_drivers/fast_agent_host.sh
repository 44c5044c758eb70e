#!/bin/sh
# fast-agent (`fast-agent go`, one-shot, the `passthrough` model: no LLM is called) with
# the server given on the command line as its one stdio MCP server (`--stdio`), HOME and
# fast-agent's own home in a fresh folder (`--no-home`), then this becomes fast-agent
# (exec), so the host the check ends is fast-agent itself.
# Usage: FAST_AGENT=/path/to/fast-agent fast_agent_host.sh CMD ARGS...
set -eu
dir=$(mktemp -d)
server=$(python3 -c 'import shlex, sys; print(shlex.join(sys.argv[1:]))' "$@")
export HOME="$dir" XDG_CONFIG_HOME="$dir/.config" XDG_DATA_HOME="$dir/.local/share" \
    XDG_STATE_HOME="$dir/.local/state" XDG_CACHE_HOME="$dir/.cache"
cd "$dir"
exec "${FAST_AGENT:-fast-agent}" go --no-home --model passthrough --stdio "$server" \
    --message "say hi"
