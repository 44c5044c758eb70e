#!/bin/sh
# A stdio MCP server in busybox sh, for the container tests (PID 1 of its container).
# Mode ($1):
#   eof-exit    exits 0 when stdin reaches EOF (a well-behaved server)
#   ignore-eof  keeps running after EOF; exits 143 on SIGTERM (the common leak)
#   stubborn    keeps running after EOF and ignores SIGTERM: only SIGKILL ends it
# It answers initialize, ping, tools/list and tools/call; notifications get no reply.
mode=${1:-eof-exit}
child=
on_term() {
    [ -n "$child" ] && kill "$child" 2>/dev/null
    exit 143
}
case $mode in
    stubborn) trap '' TERM INT ;;
    *) trap on_term TERM INT ;;
esac
echo "busybox-stdio: mode $mode" >&2
reply() { printf '{"jsonrpc":"2.0","id":%s,%s}\n' "$1" "$2"; }
while IFS= read -r line; do
    id=$(printf '%s' "$line" | sed -n -E 's/.*"id"[ ]*:[ ]*("[^"]*"|-?[0-9]+).*/\1/p')
    method=$(printf '%s' "$line" | sed -n -E 's/.*"method"[ ]*:[ ]*"([^"]*)".*/\1/p')
    [ -z "$id" ] && continue  # a notification (or a response): nothing to say
    case $method in
        initialize)
            version=$(printf '%s' "$line" \
                | sed -n -E 's/.*"protocolVersion"[ ]*:[ ]*"([^"]*)".*/\1/p')
            reply "$id" "\"result\":{\"protocolVersion\":\"${version:-2025-06-18}\",\
\"capabilities\":{\"tools\":{}},\"serverInfo\":{\"name\":\"busybox-stdio\",\"version\":\"1\"}}"
            ;;
        ping) reply "$id" '"result":{}' ;;
        tools/list)
            reply "$id" '"result":{"tools":[{"name":"echo","description":"says ok",'\
'"inputSchema":{"type":"object","properties":{}}}]}'
            ;;
        tools/call) reply "$id" '"result":{"content":[{"type":"text","text":"ok"}]}' ;;
        *) reply "$id" '"error":{"code":-32601,"message":"method not found"}' ;;
    esac
done
echo "busybox-stdio: stdin closed" >&2
[ "$mode" = eof-exit ] && exit 0
while :; do
    sleep 1000 &
    child=$!
    wait "$child"
done
