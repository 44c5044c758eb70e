"""A stand-in for the model APIs on 127.0.0.1 that drives a host through real MCP tool
calls by a script, with no network.

    python -m mcp_tether.hostcheck.modelapi --script FILE [--port N] [--events DIR]
    python -m mcp_tether.hostcheck.modelapi --example     # a script to start from

It prints its base URL (`http://127.0.0.1:PORT`) on its first line; point the host at
it (Claude Code: `ANTHROPIC_BASE_URL`; Codex: a `model_providers` entry whose
`base_url` is the URL plus `/v1`) and give the host the prompt `[mcp-tether agent
main]`. It answers the Anthropic Messages API (`POST /v1/messages`, an SSE reply sent
whole with a Content-Length, which Claude Code reads) and the OpenAI Responses API
(`POST /v1/responses`, streamed as it goes: headers at once, SSE comments as keep-alives
while the turn waits, then its events); the shapes are `modelwire.py`'s.

A **script** says, per agent, what each of its turns does:

    {"server": "mcp-tether-recorder", "tool": "echo",
     "agents": {"main": [{"call": 1}, {"spawn": ["A", "B"]}, {"wait": ["A"]},
                         {"close": ["A"]}, {"gate": "end-old", "call": 1}, {"say": "done"}],
                "A": [{"call": 1}, {"call": 1, "pause": 2}, {"say": "A done"}]}}

A step's `gate` is waited for first (until `POST /mcp-tether/gate/NAME` opens it),
then its `pause` (the model thinking: the host waits for the reply, the server gets
nothing), then one turn with its calls in parallel: `call` N calls of the server's tool
(each `{"text": "mcp-tether call AGENT/STEP/N"}`, so the recorder writes down which
copy answered which call), `spawn` starts subagents (their first message carries
`[mcp-tether agent NAME]`), `wait` and `close` end them where the host has such tools.
`say` (or a step with nothing to call) ends the agent's turn with that text. An agent
past its last step, and a conversation with no agent mark (a host's side request: a
title, a summary), gets plain text.

Guarantees:
- Binds 127.0.0.1 only and opens no connection: nothing leaves the machine.
- Events, one JSON line each with monotonic `t` (comparable with the recorder's), go to
  `DIR/model.log` and, when it has a reader, to `DIR/events.fifo` (never blocking):
  `model-turn` (what an agent's step did), `model-result` (each call's result as the
  host reported it: `ok` when the echo came back), `model-gate`, `model-pause` (the
  model thinking for `seconds`), `model-missing` (the host offered no way to make a
  call), `model-other` (anything else asked).
- The step is read from the conversation (`modelwire`), never kept per connection:
  agents in parallel are answered independently; a request retried is answered again.
- Stdout carries the URL line only; diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mcp_tether.hostcheck.modelwire import (
    GATE_PATH,
    WIRES,
    Call,
    Conversation,
    Turn,
    Wire,
    new_id,
    step_mark,
)

__all__ = ["Step", "Script", "ModelAPI", "serve", "main", "CALL_TEXT", "GATE_PATH"]

CALL_TEXT = "mcp-tether call {agent}/{step}/{n}"  # the echo text of each call
GATE_TIMEOUT = 900.0  # a gate nobody opens: the turn goes on (and says so) after this
# While a turn waits (a gate, a pause), a stream that starts at once gets a keep-alive this
# often, as a streaming API sends bytes while its model thinks: a host's read timeout
# then counts from the last byte, not from its request.
KEEPALIVE = 5.0
MODEL = "mcp-tether-stand-in"
EXAMPLE = {"server": "mcp-tether-recorder", "tool": "echo", "agents": {
    "main": [{"call": 1}, {"spawn": ["A"]}, {"wait": ["A"]}, {"close": ["A"]},
             {"call": 1, "pause": 2}, {"say": "done"}],
    "A": [{"call": 1}, {"call": 1, "pause": 1}, {"say": "A done"}]}}


@dataclass(frozen=True)
class Step:
    """One turn of an agent (see the module's docstring)."""

    calls: int = 0
    spawn: tuple[str, ...] = ()
    wait: tuple[str, ...] = ()
    close: tuple[str, ...] = ()
    pause: float = 0.0
    gate: str = ""
    say: str = ""

    @classmethod
    def parse(cls, doc: Any, where: str) -> Step:
        if not isinstance(doc, dict):
            raise ValueError(f"{where}: a step is an object")
        unknown = set(doc) - {"call", "spawn", "wait", "close", "pause", "gate", "say"}
        if unknown:
            raise ValueError(f"{where}: unknown key {sorted(unknown)[0]!r}")
        names = {}
        for key in ("spawn", "wait", "close"):
            got = doc.get(key, [])
            if not isinstance(got, list) or not all(isinstance(n, str) for n in got):
                raise ValueError(f"{where}: {key} is a list of agent names")
            names[key] = tuple(got)
        calls, pause = doc.get("call", 0), doc.get("pause", 0)
        if not isinstance(calls, int) or calls < 0:
            raise ValueError(f"{where}: call is a count of calls (0 or more)")
        if not isinstance(pause, (int, float)) or pause < 0:
            raise ValueError(f"{where}: pause is seconds (0 or more)")
        return cls(calls=calls, pause=float(pause), gate=str(doc.get("gate", "")),
                   say=str(doc.get("say", "")), **names)


@dataclass
class Script:
    agents: dict[str, tuple[Step, ...]]
    server: str = "mcp-tether-recorder"
    tool: str = "echo"

    def add(self, doc: Any) -> None:
        """More agents (a soak starting a session): checked as a script of their own,
        whose agents may name each other."""
        more = Script.parse({"agents": {"main": [], **doc["agents"]}})
        more.agents.pop("main")
        self.agents.update(more.agents)

    @classmethod
    def parse(cls, doc: Any) -> Script:
        """A script from its JSON document; ValueError says what is wrong, in one line."""
        if not isinstance(doc, dict) or not isinstance(doc.get("agents"), dict):
            raise ValueError("a script is an object with `agents`: {NAME: [step, ...]}")
        agents = {}
        for name, steps in doc["agents"].items():
            if not isinstance(steps, list):
                raise ValueError(f"agent {name!r}: its steps are a list")
            agents[str(name)] = tuple(Step.parse(s, f"agent {name!r} step {i}")
                                      for i, s in enumerate(steps))
        if "main" not in agents:
            raise ValueError("a script has a `main` agent (the prompt's)")
        for name, steps in agents.items():
            for st in steps:
                for other in (*st.spawn, *st.wait, *st.close):
                    if other not in agents:
                        raise ValueError(f"agent {name!r} names agent {other!r}, "
                                         "which has no steps")
        return cls(agents, str(doc.get("server", cls.server)), str(doc.get("tool", cls.tool)))


@dataclass
class _Sent:
    agent: str
    step: int
    call: Call


@dataclass
class ModelAPI:
    """The script's engine: a request's body in, the turn to answer with out."""

    script: Script
    events: str | None = None  # the events folder (model.log, events.fifo)
    gate_timeout: float = GATE_TIMEOUT
    dump: str | None = None  # a folder for every request body (by hand: what a host sends)
    # in-process users (a soak) hear each event as it is noted, from the serving thread
    listeners: list[Callable[[dict[str, Any]], None]] = field(default_factory=list)
    sent: dict[str, _Sent] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _gates: dict[str, threading.Event] = field(default_factory=dict)
    _log: int = -1
    _fifo: int = -1

    def __post_init__(self) -> None:
        if self.events:
            self._log = os.open(os.path.join(self.events, "model.log"),
                                os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            with contextlib.suppress(OSError):  # no reader: the file is enough
                self._fifo = os.open(os.path.join(self.events, "events.fifo"),
                                     os.O_WRONLY | os.O_NONBLOCK)

    def note(self, what: str, **extra: Any) -> None:
        ev = {"t": time.monotonic(), "wall": time.time(), "pid": os.getpid(), "role": "model",
              "what": what, **extra}
        line = (json.dumps(ev) + "\n").encode()
        with self._lock:
            if self._log >= 0:
                os.write(self._log, line)
            if self._fifo >= 0:
                with contextlib.suppress(OSError):  # full or readerless: the file has it
                    os.write(self._fifo, line)
            if self._log < 0 and not self.listeners:
                sys.stderr.write(line.decode())
        for hear in self.listeners:
            hear(ev)

    # -- gates ------------------------------------------------------------------------
    def _gate(self, name: str) -> threading.Event:
        with self._lock:
            return self._gates.setdefault(name, threading.Event())

    def open_gate(self, name: str) -> None:
        self._gate(name).set()
        self.note("model-gate-open", gate=name)

    # -- the script -------------------------------------------------------------------
    def answer(self, wire: Wire, body: dict[str, Any],
               tick: Callable[[], None] | None = None) -> Turn:
        """The turn that answers `body` (waits at a gate and for a pause first, calling
        `tick` every KEEPALIVE seconds meanwhile: a stream's keep-alive)."""
        asked = time.monotonic()
        if self.dump:
            name = f"{wire.name}-{time.time():.6f}-{threading.get_ident()}.json"
            with open(os.path.join(self.dump, name), "w") as fh:
                json.dump(body, fh)
        conv = wire.read(body)
        self._results(conv)
        steps = self.script.agents.get(conv.agent or "")
        if conv.agent is None or steps is None:
            self.note("model-other", path=wire.path, agent=conv.agent,
                      why="no agent of the script")
            return Turn(step=-1, text="ok")
        k = conv.last_step if conv.last_was_search else conv.last_step + 1
        fresh = not conv.last_was_search
        while k < len(steps):
            st = steps[k]
            if fresh:
                self._wait(conv.agent, k, st, tick)
            turn = self._turn(wire, conv, k, st)
            if turn is not None:
                self._sent(wire, conv.agent, turn, asked)
                return turn
            k, fresh = k + 1, True  # nothing the host can do for this step: the next one
        turn = Turn(step=len(steps), text=f"mcp-tether agent {conv.agent}: done")
        self.note("model-turn", agent=conv.agent, step=turn.step, asked=asked, calls=[],
                  text=turn.text, past_end=True)
        return turn

    def _wait(self, agent: str, k: int, st: Step, tick: Callable[[], None] | None) -> None:
        if st.gate:
            self.note("model-gate", agent=agent, step=k, gate=st.gate)
            gate, end = self._gate(st.gate), time.monotonic() + self.gate_timeout
            while not gate.wait(max(0.0, min(KEEPALIVE, end - time.monotonic()))):
                if time.monotonic() >= end:
                    self.note("model-gate-timeout", agent=agent, step=k, gate=st.gate)
                    break
                if tick is not None:
                    tick()
        if st.pause:
            self.note("model-pause", agent=agent, step=k, seconds=st.pause)
            end = time.monotonic() + st.pause
            while (left := end - time.monotonic()) > 0:
                time.sleep(min(left, KEEPALIVE))
                if tick is not None and end - time.monotonic() > 0:
                    tick()

    def _turn(self, wire: Wire, conv: Conversation, k: int, st: Step) -> Turn | None:
        agent = conv.agent or ""
        calls: list[Call] = []
        wanted = 0
        for n in range(st.calls):
            wanted += 1
            text = CALL_TEXT.format(agent=agent, step=k, n=n)
            call = wire.mcp_call(conv, self.script.server, self.script.tool, {"text": text})
            if call is None:
                search = wire.search_call(conv, self.script.server, self.script.tool)
                if search is not None and not conv.last_was_search:
                    return Turn(step=k, calls=[search], search=True)
                self.note("model-missing", agent=agent, step=k,
                          missing=f"the tool {self.script.tool!r} of {self.script.server!r}")
                continue
            call.expect = text
            calls.append(call)
        ids = wire.agent_ids(conv)
        for kind, names in (("spawn", st.spawn), ("wait", st.wait), ("close", st.close)):
            for name in names:
                wanted += 1
                call = wire.agent_call(conv, kind, name, ids)
                if call is not None:
                    calls.append(call)
        if calls:
            return Turn(step=k, calls=calls, text=st.say)
        if st.say or not wanted:
            return Turn(step=k, text=f"{st.say or 'mcp-tether'} {step_mark(k)}")
        return None  # only what this host has no tool for (a wait on Claude Code)

    def _sent(self, wire: Wire, agent: str, turn: Turn, asked: float) -> None:
        with self._lock:
            for call in turn.calls:
                call.id = call.id or new_id(wire, turn.step, turn.search)
                self.sent[call.id] = _Sent(agent, turn.step, call)
        self.note("model-turn", agent=agent, step=turn.step, asked=asked, search=turn.search,
                  text=turn.text, calls=[{"id": c.id, "kind": c.kind, "name": c.name,
                                          "namespace": c.namespace, "text": c.expect,
                                          "agent": c.agent} for c in turn.calls])

    def _results(self, conv: Conversation) -> None:
        """Each result of a call we made, the first time a request carries it."""
        for cid, (text, error) in conv.results.items():
            with self._lock:
                sent = self.sent.pop(cid, None)
            if sent is None:
                continue
            call = sent.call
            ok = not error and (call.expect in text if call.expect else True)
            self.note("model-result", agent=sent.agent, step=sent.step, id=cid, kind=call.kind,
                      text=call.expect or call.agent, ok=ok, result=text[:300])


def _handler(api: ModelAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: every reply has a Content-Length

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002  # stdlib's name
            pass  # stdout is the URL line; the events say what was asked

        def _reply(self, status: int, ctype: str, data: bytes) -> None:
            with contextlib.suppress(OSError):  # the host gave up on this request
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        def _json(self, status: int, doc: Any) -> None:
            self._reply(status, "application/json", json.dumps(doc).encode())

        def do_GET(self) -> None:  # noqa: N802  # http.server's name
            path = self.path.split("?", 1)[0]
            if path.rstrip("/").endswith("/models"):
                self._json(200, {"object": "list", "data": [
                    {"id": MODEL, "object": "model", "type": "model",
                     "display_name": MODEL, "created": 0, "owned_by": "mcp-tether"}]})
                return
            api.note("model-other", path=path[:200], method="GET")
            self._json(404, {"error": {"type": "not_found", "message": "not here"}})

        def do_HEAD(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:  # noqa: N802
            path = self.path.split("?", 1)[0]
            size = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(size) if size > 0 else b""
            if path.startswith(GATE_PATH):
                api.open_gate(path[len(GATE_PATH):])
                self._json(200, {"open": True})
                return
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = None
            if path.endswith("/count_tokens") and isinstance(body, dict):
                self._json(200, {"input_tokens": max(1, len(raw) // 4)})
                return
            wire = next((w for w in WIRES.values() if path.endswith(w.path)), None)
            if wire is None or not isinstance(body, dict):
                api.note("model-other", path=path[:200], method="POST")
                self._json(404, {"error": {"type": "not_found", "message": "not here"}})
                return
            model = str(body.get("model") or MODEL)
            alive = wire.keepalive
            if not body.get("stream") or alive is None:
                turn = api.answer(wire, body)
                ctype, data = wire.render(turn, model, stream=bool(body.get("stream")))
                self._reply(200, ctype, data)
                return
            # Streamed as it goes (chunked): the headers at once, keep-alives while the
            # turn waits, then the turn's events.
            with contextlib.suppress(OSError):  # the host gave up on this request
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
            turn = api.answer(wire, body, tick=lambda: self._chunk(alive))
            self._chunk(wire.render(turn, model)[1])
            self._chunk(b"")  # the last chunk

        def _chunk(self, data: bytes) -> None:
            with contextlib.suppress(OSError):  # the host gave up on this request
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

    return Handler


def serve(api: ModelAPI, port: int = 0) -> ThreadingHTTPServer:
    """The stand-in's server on 127.0.0.1 (`port` 0: any free one), not yet serving."""
    server = ThreadingHTTPServer(("127.0.0.1", port), _handler(api))
    server.daemon_threads = True
    return server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m mcp_tether.hostcheck.modelapi",
        description="A stand-in for the Anthropic Messages and OpenAI Responses APIs on "
        "127.0.0.1 that drives a host through MCP tool calls by a script.",
        epilog="example: python -m mcp_tether.hostcheck.modelapi --example > s.json; "
        "python -m mcp_tether.hostcheck.modelapi --script s.json --events /tmp/ev & "
        "ANTHROPIC_BASE_URL=http://127.0.0.1:PORT claude -p '[mcp-tether agent main]'")
    ap.add_argument("--script", metavar="FILE", help="the script (JSON; - for stdin)")
    ap.add_argument("--port", type=int, default=0, help="the port (0: any free one)")
    ap.add_argument("--events", metavar="DIR", help="write events to DIR/model.log "
                    "(and DIR/events.fifo when it has a reader); else to stderr")
    ap.add_argument("--dump", metavar="DIR", help="also write every request's body to "
                    "DIR (what the host sends, to read by hand)")
    ap.add_argument("--example", action="store_true", help="print an example script and exit")
    args = ap.parse_args(argv)
    if args.example:
        print(json.dumps(EXAMPLE, indent=2))
        return 0
    if not args.script:
        ap.error("--script FILE is needed (or --example)")
    try:
        if args.script == "-":
            text = sys.stdin.read()
        else:
            with open(args.script) as fh:
                text = fh.read()
        script = Script.parse(json.loads(text))
    except (OSError, ValueError) as exc:
        sys.stderr.write(f"modelapi: {args.script}: {exc}\n")
        return 2
    api = ModelAPI(script, events=args.events, dump=args.dump)
    try:
        server = serve(api, args.port)
    except OSError as exc:
        sys.stderr.write(f"modelapi: cannot listen on 127.0.0.1:{args.port}: {exc.strerror}\n")
        return 2
    port = server.server_address[1]
    api.note("model-start", port=port)
    sys.stdout.write(f"http://127.0.0.1:{port}\n")
    sys.stdout.flush()
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
