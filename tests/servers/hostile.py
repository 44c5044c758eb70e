"""A stdlib MCP stdio server whose every word is hostile, for the output-escaping tests.

Its name, version and tool names carry HTML, CDATA ends, Markdown pipes and links,
ANSI escapes and BEL; its stderr adds invalid UTF-8 and a 1 MB line. A non-daemon thread
keeps it alive after EOF, so the probe fails it and quotes all of that in its diagnosis.
"""

import json
import sys
import threading
import time

HOSTILE = ("<script>alert(1)</script> <img src=x onerror=alert(1)> ]]> | a | b |\n"
           "| --- | [x](javascript:alert(1)) \x1b[31mred\x1b[0m \x1b]0;owned\x07 \x07 \x9b2J")

err = sys.stderr.buffer
err.write(b"x" * (1 << 20) + b"\n")  # a 1 MB line
err.write(HOSTILE.encode() + b"\n" + b"bad utf-8: \xff\xfe\xc3( " + b"<b>" * 3 + b"\n")
err.write(b"Error: " + HOSTILE.encode() + b"\n")
err.flush()
threading.Thread(target=lambda: [time.sleep(0.1) for _ in iter(int, 1)]).start()
out = sys.stdout.buffer
for raw in sys.stdin.buffer:
    msg = json.loads(raw)
    if "id" not in msg:
        continue
    method = msg.get("method")
    if method == "initialize":
        result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                  "serverInfo": {"name": HOSTILE, "version": HOSTILE}}
    elif method == "tools/list":
        result = {"tools": [{"name": HOSTILE, "description": HOSTILE,
                             "inputSchema": {"type": "object"}}]}
    else:
        result = {}
    out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode()
              + b"\n")
    out.flush()
