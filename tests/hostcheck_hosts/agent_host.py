"""An agent host (stdlib only) that asks a model API what to do and runs its tool calls on
MCP stdio servers: a stand-in for Claude Code and Codex with its habits on the command
line, for the tool-calling scenarios' tests.

Usage: agent_host.py --api anthropic|openai --copies shared|per-agent
                     [--on-close eof|sigterm|nothing] -- SERVER-ARGV...
The model's base URL is in MODEL_URL; the prompt is the first line of stdin.

- `--api anthropic`: POST /v1/messages (stream), tools `mcp__rec__echo` and `Agent`
  (a subagent runs to its end inside the call; several in one turn run in parallel);
  `--api openai`: POST /v1/responses (stream), namespaces `mcp__rec` (`echo`) and
  `multi_agent_v1` (`spawn_agent` starts a subagent in a thread, `wait_agent` joins it,
  `close_agent` closes it).
- `--copies shared`: one server for every agent (Claude Code's habit); `per-agent`: each
  agent starts its own copy, as Codex does.
- `--on-close`: what a per-agent copy gets when its agent is closed (openai) or done
  (anthropic): its stdin closed, SIGTERM to its group, or nothing.
A call on a server that is gone answers "tool call error: Transport closed" to the
model, as Codex does. At the end the host closes every server's stdin, then SIGTERMs it.
"""

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.request
import uuid

args = sys.argv[1:]
SERVER = args[args.index("--") + 1:]
opts = dict(zip(args[:args.index("--")][::2], args[:args.index("--")][1::2], strict=True))
API = opts.get("--api", "anthropic")
COPIES = opts.get("--copies", "shared")
ON_CLOSE = opts.get("--on-close", "nothing")
URL = os.environ["MODEL_URL"]


class Server:
    def __init__(self):
        self.p = subprocess.Popen(SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  start_new_session=True)
        self.lock = threading.Lock()
        self.next = 0
        self.rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "agent-host", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        self.rpc("tools/list", {})

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def rpc(self, method, params):
        with self.lock:
            self.next += 1
            self.send({"jsonrpc": "2.0", "id": self.next, "method": method, "params": params})
            line = self.p.stdout.readline()
            if not line:
                raise OSError("EOF")
            return json.loads(line)["result"]

    def call(self, text):
        try:
            res = self.rpc("tools/call", {"name": "echo", "arguments": {"text": text}})
            return res["content"][0]["text"]
        except (OSError, ValueError, KeyError):
            return "tool call error: Transport closed"

    def close(self, how="eof"):
        if how == "nothing":
            return
        try:
            if how == "sigterm":
                os.killpg(self.p.pid, signal.SIGTERM)
            else:
                self.p.stdin.close()
        except OSError:
            pass


def model(body):
    path = "/v1/messages" if API == "anthropic" else "/v1/responses"
    req = urllib.request.Request(URL + path, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        raw = resp.read().decode()
    events = []
    for chunk in raw.split("\n\n"):
        for line in chunk.splitlines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
    return events


shared = Server() if COPIES == "shared" else None
agents = {}  # openai: agent id -> (thread, result holder, server)


class Agent:
    def __init__(self, prompt):
        self.prompt = prompt
        self.server = shared or Server()
        self.result = ""

    def tool(self, name, args):
        if name in ("mcp__rec__echo", "echo"):
            return self.server.call(args.get("text", ""))
        if name == "Agent":
            return run_agents([args["prompt"]])[0]
        if name == "spawn_agent":
            sub = Agent(args["message"])
            t = threading.Thread(target=sub.run)
            t.start()
            aid = str(uuid.uuid4())
            agents[aid] = (t, sub)
            return json.dumps({"agent_id": aid})
        if name == "wait_agent":
            for aid in args["targets"]:
                agents[aid][0].join()
            return json.dumps({"status": {a: {"completed": agents[a][1].result}
                                          for a in args["targets"]}})
        if name == "close_agent":
            sub = agents[args["target"]][1]
            if COPIES == "per-agent":
                sub.server.close(ON_CLOSE)
            return json.dumps({"previous_status": {"completed": sub.result}})
        return f"unknown tool {name}"

    def run(self):
        if API == "anthropic":
            self.run_anthropic()
        else:
            self.run_openai()

    def run_anthropic(self):
        tools = [{"name": "mcp__rec__echo", "input_schema": {"type": "object"}},
                 {"name": "Agent", "input_schema": {"type": "object"}}]
        messages = [{"role": "user", "content": [{"type": "text", "text": self.prompt}]}]
        while True:
            events = model({"model": "m", "stream": True, "messages": messages, "tools": tools})
            blocks, inputs = [], {}
            for e in events:
                if e["type"] == "content_block_start":
                    blocks.append(dict(e["content_block"]))
                    inputs[e["index"]] = ""
                elif e["type"] == "content_block_delta":
                    d = e["delta"]
                    if d["type"] == "text_delta":
                        blocks[e["index"]]["text"] += d["text"]
                    else:
                        inputs[e["index"]] += d["partial_json"]
            for i, b in enumerate(blocks):
                if b["type"] == "tool_use":
                    b["input"] = json.loads(inputs[i] or "{}")
            messages.append({"role": "assistant", "content": blocks})
            uses = [b for b in blocks if b["type"] == "tool_use"]
            if not uses:
                self.result = " ".join(b.get("text", "") for b in blocks)
                return
            spawns = [b for b in uses if b["name"] == "Agent"]
            done = dict(zip([b["id"] for b in spawns],
                            run_agents([b["input"]["prompt"] for b in spawns]), strict=True))
            results = [{"type": "tool_result", "tool_use_id": b["id"],
                        "content": [{"type": "text", "text": done[b["id"]] if b["id"] in done
                                     else self.tool(b["name"], b["input"])}]} for b in uses]
            messages.append({"role": "user", "content": results})

    def run_openai(self):
        tools = [{"type": "namespace", "name": "mcp__rec", "tools": [
                     {"type": "function", "name": "echo", "parameters": {}}]},
                 {"type": "namespace", "name": "multi_agent_v1", "tools": [
                     {"type": "function", "name": n, "parameters": {}}
                     for n in ("spawn_agent", "wait_agent", "close_agent")]}]
        items = [{"type": "message", "role": "user",
                  "content": [{"type": "input_text", "text": self.prompt}]}]
        while True:
            events = model({"model": "m", "stream": True, "input": items, "tools": tools})
            out = [e["item"] for e in events if e["type"] == "response.output_item.done"]
            items += out
            fcalls = [i for i in out if i["type"] == "function_call"]
            if not fcalls:
                self.result = " ".join(c["text"] for i in out if i["type"] == "message"
                                       for c in i["content"])
                return
            for fc in fcalls:
                items.append({"type": "function_call_output", "call_id": fc["call_id"],
                              "output": self.tool(fc["name"], json.loads(fc["arguments"]))})


def run_agents(prompts):
    """Subagents run to their end, in parallel (Claude Code's Agent calls of one turn)."""
    subs = [Agent(p) for p in prompts]
    threads = [threading.Thread(target=s.run) for s in subs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for s in subs:
        if COPIES == "per-agent":
            s.server.close(ON_CLOSE)
    return [s.result for s in subs]


main = Agent(sys.stdin.readline().strip())
main.run()
print(main.result, flush=True)
copies = {id(a[1].server): a[1].server for a in agents.values()}
copies[id(main.server)] = main.server
for srv in copies.values():
    srv.close("eof")
    srv.close("sigterm")
