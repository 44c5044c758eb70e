"""The two model APIs' wire shapes, for the stand-in (`modelapi.py`): a request read as a
`Conversation`, a `Turn` written as the SSE stream the host reads.

    conv = ANTHROPIC.read(body)            # who is talking, what was done, what it offers
    data = ANTHROPIC.render(turn, model)   # the SSE bytes of one assistant turn

- **Anthropic Messages** (`POST /v1/messages`, `stream: true`): `message_start`, one
  `content_block_start`/`_delta`/`_stop` per block (text, or `tool_use` whose input
  comes as one `input_json_delta`), `message_delta` with the stop reason,
  `message_stop` (the event names and fields of Anthropic's streaming reference).
  Claude Code 2.1.332 hides MCP tools behind its `ToolSearch` tool: the request names
  them (`mcp__SERVER__TOOL`) in its text and sends them with `defer_loading`, so a call
  to one is preceded by a search turn (`select:NAME`); the tool is callable once a
  search result references it (a `tool_reference` block in the conversation).
- **OpenAI Responses** (`POST /v1/responses`, `stream: true`): `response.created`, then
  `response.output_item.added` and `.done` per item (`function_call` with its
  `call_id`, `arguments` as a JSON string and, for a tool in a namespace, the
  `namespace`; or an assistant `message`), then `response.completed` with usage.
  Codex 0.171.0 offers each MCP server's tools as a namespace `mcp__SERVER` and its
  agent tools (`spawn_agent`, `wait_agent`, `close_agent`) in `multi_agent_v1`.

Guarantees:
- Pure functions of the request's JSON: nothing here reads a socket or a clock.
- The step an agent is at is read from the conversation itself: every call id the
  stand-in makes carries its step (`mt<step>` or `mt<step>s` for a search turn) and
  every text turn a mark (`[mcp-tether step N]`), so parallel agents never share a
  cursor and a retried request is answered the same way.
- An agent is named only by a mark in a user message's own text
  (`[mcp-tether agent NAME]`), never by a tool result (which carries what a server or
  another agent said).
"""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Call", "Conversation", "Turn", "Wire", "ANTHROPIC", "OPENAI", "WIRES",
           "AGENT_MARK", "agent_mark", "step_mark", "new_id", "GATE_PATH"]

GATE_PATH = "/mcp-tether/gate/"  # POST here + a gate's name opens it (the stand-in's control)
AGENT_MARK = re.compile(r"\[mcp-tether agent ([A-Za-z0-9_-]{1,40})\]")
STEP_MARK = re.compile(r"\[mcp-tether step (\d{1,6})\]")
# Our call ids: a prefix the host passes back untouched, the step, `s` for a search turn.
CALL_ID = re.compile(r"(?:toolu_|call_)mt(\d{1,6})(s?)_")
MCP_NAME = re.compile(r"\bmcp__([A-Za-z0-9_-]+?)__([A-Za-z0-9_-]+)")
SEARCH_TOOLS = ("ToolSearch",)  # Claude Code's deferred-tool loader
AGENT_TOOLS = ("Agent", "Task")  # Claude Code's subagent tool (Task before 2.1)


def agent_mark(name: str) -> str:
    return f"[mcp-tether agent {name}]"


def step_mark(step: int) -> str:
    return f"[mcp-tether step {step}]"


def normal(name: str) -> str:
    """A server name as compared within tool names: hosts differ on what they replace
    (Codex 0.171.0 names `mcp-tether-recorder`'s namespace `mcp__mcp_tether_recorder`,
    Claude Code keeps the hyphens), so anything but a letter or digit reads as `_`."""
    return re.sub(r"[^a-z0-9]", "_", name.lower())


@dataclass
class Call:
    """One tool call of a turn: what the script asked (`kind`: call, spawn, wait, close,
    search) and how it goes on the wire (`name`, `namespace`, `args`)."""

    kind: str
    name: str
    args: dict[str, Any]
    namespace: str = ""
    id: str = ""
    expect: str = ""  # call: the text the echo must bring back
    agent: str = ""  # spawn/wait/close: the script's name of the agent


@dataclass
class Turn:
    """One assistant turn: tool calls (in parallel), or text that ends the agent's turn."""

    step: int
    calls: list[Call] = field(default_factory=list)
    text: str = ""
    search: bool = False  # a search turn that loads deferred tools before step `step`


@dataclass
class Conversation:
    """What one request says: whose conversation, how far our script got, what it offers."""

    agent: str | None
    last_step: int = -1  # the last step of ours in the conversation (-1: none)
    last_was_search: bool = False
    # our calls seen, by id: (kind-free) name and input; and their results: text, error
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    results: dict[str, tuple[str, bool]] = field(default_factory=dict)
    functions: dict[str, str] = field(default_factory=dict)  # offered tool -> namespace
    mentioned: set[str] = field(default_factory=set)  # deferred MCP tools named in text
    model: str = ""


def _texts(content: Any) -> list[str]:
    """The text of a message's content (a string, or blocks with `text`)."""
    if isinstance(content, str):
        return [content]
    out = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict) and isinstance(block.get("text"), str) \
                    and block.get("type") in ("text", "input_text", "output_text"):
                out.append(block["text"])
    return out


def _mark_steps(conv: Conversation, call_id: str, texts: list[str]) -> None:
    m = CALL_ID.match(call_id) if call_id else None
    steps: list[tuple[int, bool]] = []
    if m:
        steps.append((int(m.group(1)), m.group(2) == "s"))
    for t in texts:
        steps += [(int(s), False) for s in STEP_MARK.findall(t)]
    for step, search in steps:
        if step > conv.last_step or (step == conv.last_step and not search):
            conv.last_step, conv.last_was_search = step, search


def _find_agent(conv: Conversation, texts: list[str]) -> None:
    if conv.agent is None:
        for t in texts:
            m = AGENT_MARK.search(t)
            if m:
                conv.agent = m.group(1)
                return


class Wire:
    """One API's shapes. `path` is the POST the host streams turns from."""

    name = ""
    path = ""
    id_prefix = ""  # what the host's call ids look like (ours follow it)
    # what keeps a stream alive while a turn waits (None: the reply is sent whole)
    keepalive: bytes | None = None

    def read(self, body: dict[str, Any]) -> Conversation:
        raise NotImplementedError

    def render(self, turn: Turn, model: str, stream: bool = True) -> tuple[str, bytes]:
        """The turn as the host asked for it: (content type, body)."""
        raise NotImplementedError

    def mcp_call(self, conv: Conversation, server: str, tool: str, args: dict[str, Any],
                 ) -> Call | None:
        """The call of MCP tool `tool` of `server` as the request offers it (None: not)."""
        raise NotImplementedError

    def search_call(self, conv: Conversation, server: str, tool: str) -> Call | None:
        """A turn that makes a deferred MCP tool callable (None: none needed or possible)."""
        return None

    def agent_call(self, conv: Conversation, kind: str, agent: str,
                   ids: dict[str, str]) -> Call | None:
        """spawn/wait/close of the script's agent `agent` (None: the host has no such tool,
        or nothing to do: a host whose subagent call waits for the agent)."""
        raise NotImplementedError

    def agent_ids(self, conv: Conversation) -> dict[str, str]:
        """The host's ids of the agents our spawns started, by the script's name."""
        out = {}
        for cid, call in conv.calls.items():
            m = AGENT_MARK.search(str(call.get("message") or call.get("prompt") or ""))
            if not m or cid not in conv.results:
                continue
            got = _agent_id(conv.results[cid][0])
            if got:
                out[m.group(1)] = got
        return out


def _agent_id(output: str) -> str:
    """The agent id in a spawn's output: a JSON object's id field, else the first id-like word."""
    try:
        doc = json.loads(output)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        for key in ("agent_id", "id", "agentId", "target"):
            if isinstance(doc.get(key), str) and doc[key]:
                return str(doc[key])
    m = re.search(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", output)
    return m.group(0) if m else ""


def new_id(wire: Wire, step: int, search: bool) -> str:
    """A call id of ours: the wire's prefix, the step, `s` for a search turn."""
    return f"{wire.id_prefix}mt{step}{'s' if search else ''}_{secrets.token_hex(6)}"


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class _Anthropic(Wire):
    name = "anthropic"
    path = "/v1/messages"
    id_prefix = "toolu_"

    def read(self, body: dict[str, Any]) -> Conversation:
        conv = Conversation(agent=None, model=str(body.get("model") or ""))
        deferred: set[str] = set()
        loaded: set[str] = set()  # deferred tools a search result referenced: callable now
        for tool in body.get("tools") or []:
            if isinstance(tool, dict) and isinstance(tool.get("name"), str):
                if tool.get("defer_loading"):
                    deferred.add(tool["name"])
                else:
                    conv.functions[tool["name"]] = ""
        messages = body.get("messages") or []
        for msg in messages:
            if not isinstance(msg, dict):
                continue
            role, content = msg.get("role"), msg.get("content")
            if role == "user":
                _find_agent(conv, _texts(content))
            for block in content if isinstance(content, list) else []:
                if not isinstance(block, dict):
                    continue
                if role == "assistant" and block.get("type") == "tool_use":
                    cid = str(block.get("id", ""))
                    if CALL_ID.match(cid):
                        conv.calls[cid] = {"name": block.get("name"),
                                           **(block.get("input") or {})}
                    _mark_steps(conv, cid, [])
                elif block.get("type") == "tool_result":
                    cid = str(block.get("tool_use_id", ""))
                    inner = block.get("content")
                    conv.results[cid] = ("\n".join(_texts(inner)), bool(block.get("is_error")))
                    loaded |= {str(b.get("tool_name")) for b in inner or []
                               if isinstance(b, dict) and b.get("type") == "tool_reference"}
            if role == "assistant":
                _mark_steps(conv, "", _texts(content))
            # Deferred tools are named in text only (a system message, a reminder).
            for text in _texts(content):
                conv.mentioned |= {m.group(0) for m in MCP_NAME.finditer(text)}
        for text in _texts(body.get("system")):
            conv.mentioned |= {m.group(0) for m in MCP_NAME.finditer(text)}
        conv.mentioned |= deferred
        # A deferred tool is sent with `defer_loading` until a search result references
        # it (a `tool_reference` block); from then on the model may call it.
        conv.functions.update(dict.fromkeys(deferred & loaded, ""))
        return conv

    def _mcp_name(self, names: set[str] | dict[str, str], server: str, tool: str) -> str:
        """`mcp__SERVER__TOOL` among `names`; else the one MCP tool named `tool` (a host
        that named the server its own way)."""
        found = [(m.group(0), normal(m.group(1)) == normal(server)) for m in
                 (MCP_NAME.fullmatch(n) for n in sorted(names)) if m and m.group(2) == tool]
        exact = [name for name, same in found if same]
        return exact[0] if exact else found[0][0] if len(found) == 1 else ""

    def mcp_call(self, conv: Conversation, server: str, tool: str, args: dict[str, Any],
                 ) -> Call | None:
        name = self._mcp_name(conv.functions, server, tool)
        return Call("call", name, args) if name else None

    def search_call(self, conv: Conversation, server: str, tool: str) -> Call | None:
        name = self._mcp_name(conv.mentioned, server, tool)
        finder = next((t for t in SEARCH_TOOLS if t in conv.functions), "")
        if not name or not finder:
            return None
        return Call("search", finder, {"query": f"select:{name}"})

    def agent_call(self, conv: Conversation, kind: str, agent: str,
                   ids: dict[str, str]) -> Call | None:
        tool = next((t for t in AGENT_TOOLS if t in conv.functions), "")
        if kind != "spawn" or not tool:
            return None  # Claude Code's Agent call returns when its agent is done
        return Call("spawn", tool, {
            "description": f"mcp-tether agent {agent}",
            "prompt": f"{agent_mark(agent)} Follow the mcp-tether stand-in's script.",
            "subagent_type": "general-purpose", "run_in_background": False}, agent=agent)

    def render(self, turn: Turn, model: str, stream: bool = True) -> tuple[str, bytes]:
        blocks: list[dict[str, Any]] = []
        if turn.text:
            blocks.append({"type": "text", "text": turn.text})
        for call in turn.calls:
            call.id = call.id or new_id(self, turn.step, turn.search)
            blocks.append({"type": "tool_use", "id": call.id, "name": call.name,
                           "input": call.args})
        message = {"id": "msg_mt" + secrets.token_hex(8), "type": "message",
                   "role": "assistant", "model": model, "content": blocks,
                   "stop_reason": "tool_use" if turn.calls else "end_turn",
                   "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}
        if not stream:
            return "application/json", json.dumps(message).encode()
        out = [_sse("message_start", {"type": "message_start", "message": {
            **message, "content": [], "stop_reason": None}})]
        for i, block in enumerate(blocks):
            start: dict[str, Any]
            if block["type"] == "text":
                start = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                start = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": i,
                                                    "content_block": start}))
            out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                    "delta": delta}))
            out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
        out.append(_sse("message_delta", {"type": "message_delta", "delta": {
            "stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": 1}}))
        out.append(_sse("message_stop", {"type": "message_stop"}))
        return "text/event-stream", b"".join(out)


class _OpenAI(Wire):
    name = "openai"
    path = "/v1/responses"
    id_prefix = "call_"
    keepalive = b": keep-alive\n\n"  # an SSE comment: no event, but bytes on the wire

    def read(self, body: dict[str, Any]) -> Conversation:
        conv = Conversation(agent=None, model=str(body.get("model") or ""))
        for tool in body.get("tools") or []:
            if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
                continue
            if tool.get("type") == "namespace":
                for inner in tool.get("tools") or []:
                    if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                        conv.functions.setdefault(inner["name"], tool["name"])
                        conv.functions[f"{tool['name']}/{inner['name']}"] = tool["name"]
            elif tool.get("type") == "function":
                conv.functions[tool["name"]] = ""
        items = body.get("input") or []
        if isinstance(items, str):
            items = [{"type": "message", "role": "user", "content": items}]
        for item in items:
            if not isinstance(item, dict):
                continue
            kind = item.get("type", "message")
            if kind == "message":
                texts = _texts(item.get("content"))
                if item.get("role") == "user":
                    _find_agent(conv, texts)
                elif item.get("role") == "assistant":
                    _mark_steps(conv, "", texts)
            elif kind == "function_call":
                cid = str(item.get("call_id", ""))
                if CALL_ID.match(cid):
                    try:
                        args = json.loads(item.get("arguments") or "{}")
                    except ValueError:
                        args = {}
                    conv.calls[cid] = {"name": item.get("name"),
                                       **(args if isinstance(args, dict) else {})}
                _mark_steps(conv, cid, [])
            elif kind == "function_call_output":
                out = item.get("output")
                text = out if isinstance(out, str) else "\n".join(_texts(out))
                conv.results[str(item.get("call_id", ""))] = (text, False)
        return conv

    def mcp_call(self, conv: Conversation, server: str, tool: str, args: dict[str, Any],
                 ) -> Call | None:
        want = normal("mcp__" + server)
        spaces = [space for key, space in conv.functions.items()
                  if "/" in key and key.endswith("/" + tool) and space.startswith("mcp__")]
        exact = [space for space in spaces if normal(space) == want]
        if exact or len(spaces) == 1:  # else the one MCP namespace with such a tool
            return Call("call", tool, args, namespace=(exact or spaces)[0])
        for name in conv.functions:  # hosts that flatten the server into the tool's name
            if "/" not in name and normal(name) == normal(f"{want}__{tool}"):
                return Call("call", name, args)
        return None

    def agent_call(self, conv: Conversation, kind: str, agent: str,
                   ids: dict[str, str]) -> Call | None:
        name = {"spawn": "spawn_agent", "wait": "wait_agent", "close": "close_agent"}[kind]
        if name not in conv.functions:
            return None
        space = conv.functions[name]
        if kind == "spawn":
            args: dict[str, Any] = {
                "message": f"{agent_mark(agent)} Follow the mcp-tether stand-in's script."}
        elif agent not in ids:
            return None  # its spawn has no id back (yet): nothing to wait for or close
        elif kind == "wait":
            args = {"targets": [ids[agent]], "timeout_ms": 3600000}
        else:
            args = {"target": ids[agent]}
        return Call(kind, name, args, namespace=space, agent=agent)

    def render(self, turn: Turn, model: str, stream: bool = True) -> tuple[str, bytes]:
        items: list[dict[str, Any]] = []
        if turn.text:
            items.append({"type": "message", "id": "msg_mt" + secrets.token_hex(8),
                          "role": "assistant", "status": "completed",
                          "content": [{"type": "output_text", "text": turn.text,
                                       "annotations": []}]})
        for call in turn.calls:
            call.id = call.id or new_id(self, turn.step, turn.search)
            item = {"type": "function_call", "id": "fc_mt" + secrets.token_hex(8),
                    "call_id": call.id, "name": call.name, "status": "completed",
                    "arguments": json.dumps(call.args)}
            if call.namespace:
                item["namespace"] = call.namespace
            items.append(item)
        base = {"id": "resp_mt" + secrets.token_hex(8), "object": "response", "model": model}
        done = {**base, "status": "completed", "output": items,
                "usage": {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": 1, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": 2}}
        if not stream:
            return "application/json", json.dumps(done).encode()
        out = [_sse("response.created", {"type": "response.created", "response": {
            **base, "status": "in_progress", "output": []}})]
        for i, item in enumerate(items):
            out.append(_sse("response.output_item.added", {
                "type": "response.output_item.added", "output_index": i, "item": item}))
            out.append(_sse("response.output_item.done", {
                "type": "response.output_item.done", "output_index": i, "item": item}))
        out.append(_sse("response.completed", {"type": "response.completed", "response": done}))
        return "text/event-stream", b"".join(out)


ANTHROPIC: Wire = _Anthropic()
OPENAI: Wire = _OpenAI()
WIRES: dict[str, Wire] = {w.name: w for w in (ANTHROPIC, OPENAI)}
