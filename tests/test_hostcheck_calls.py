"""The tool-calling scenarios: the stand-in model's wire shapes read by a real HTTP client,
what `calls.measure` makes of events, and the scenarios run on agent hosts whose habits
are known (tests/hostcheck_hosts/agent_host.py: one shared copy, or one per agent), then,
where they are installed, on Claude Code and Codex (offline, in a network namespace)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.cli import main
from mcp_tether.hostcheck import check
from mcp_tether.hostcheck.calls import habit_of, measure
from mcp_tether.hostcheck.modelapi import ModelAPI, Script, serve
from polling import until

pytestmark = pytest.mark.linux

HOSTS = Path(__file__).resolve().parent / "hostcheck_hosts"
AGENT_HOST = [sys.executable, str(HOSTS / "agent_host.py")]


@pytest.fixture
def standin(tmp_path: Path) -> Iterator[Any]:
    """A stand-in on 127.0.0.1 serving in a thread; `.post(path, body)` -> (status,
    headers, raw body) through http.client; `.api` its engine."""
    made: list[Any] = []

    class Runner:
        def start(self, script: dict[str, Any]) -> Runner:
            self.api = ModelAPI(Script.parse(script), events=str(tmp_path))
            self.server = serve(self.api)
            self.port = self.server.server_address[1]
            threading.Thread(target=self.server.serve_forever, daemon=True).start()
            made.append(self.server)
            return self

        def post(self, path: str, body: Any) -> tuple[int, dict[str, str], bytes]:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            conn.request("POST", path, body=json.dumps(body).encode(),
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            conn.close()
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data

        def events(self) -> list[dict[str, Any]]:
            with open(tmp_path / "model.log") as fh:
                return [json.loads(line) for line in fh]

    yield Runner()
    for server in made:
        server.shutdown()
        server.server_close()


def _sse(headers: dict[str, str], data: bytes) -> list[tuple[str, dict[str, Any]]]:
    """SSE as a client reads it: `event:`/`data:` lines, events split by a blank line,
    comments (`:` lines, keep-alives) skipped; the body sent whole, or chunked."""
    assert headers["content-type"] == "text/event-stream"
    assert int(headers.get("content-length", len(data))) == len(data)
    out = []
    for chunk in data.decode().split("\n\n"):
        if not chunk.strip() or chunk.startswith(":"):
            continue
        fields = dict(line.split(": ", 1) for line in chunk.splitlines())
        out.append((fields["event"], json.loads(fields["data"])))
    return out


def _tool_uses(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The tool_use blocks of an Anthropic stream, their input joined from its deltas."""
    blocks: dict[int, dict[str, Any]] = {}
    for name, ev in events:
        if name == "content_block_start":
            blocks[ev["index"]] = {**ev["content_block"], "json": ""}
        elif name == "content_block_delta" and ev["delta"]["type"] == "input_json_delta":
            blocks[ev["index"]]["json"] += ev["delta"]["partial_json"]
    return [{**b, "input": json.loads(b["json"])} for b in blocks.values()
            if b["type"] == "tool_use"]


def test_the_anthropic_stand_in_loads_a_deferred_tool_then_calls_it(standin: Any) -> None:
    """1. The MCP tool is deferred (Claude Code's ToolSearch): the first turn searches it,
    in the Messages stream's event order. 2. Once a result references it, the same step
    calls it with the call's text. 3. Its echo back: the next step, and `ok` recorded."""
    s = standin.start({"agents": {"main": [{"call": 1}, {"say": "done"}]}})
    tools = [{"name": "ToolSearch"}, {"name": "mcp__mcp-tether-recorder__echo",
                                      "defer_loading": True}]
    msgs: list[dict[str, Any]] = [{"role": "user", "content": [
        {"type": "text", "text": "[mcp-tether agent main] go"}]}]
    status, headers, data = s.post("/v1/messages?beta=true",
                                   {"model": "x", "stream": True, "messages": msgs,
                                    "tools": tools})
    events = _sse(headers, data)
    assert status == 200
    assert [e for e, _ in events] == ["message_start", "content_block_start",
                                      "content_block_delta", "content_block_stop",
                                      "message_delta", "message_stop"]
    assert events[-2][1]["delta"]["stop_reason"] == "tool_use"
    [search] = _tool_uses(events)
    assert search["name"] == "ToolSearch"
    assert search["input"] == {"query": "select:mcp__mcp-tether-recorder__echo"}
    msgs += [{"role": "assistant", "content": [{k: search[k] for k in ("type", "id", "name",
                                                                        "input")}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": search["id"],
                                           "content": [{"type": "tool_reference", "tool_name":
                                                        "mcp__mcp-tether-recorder__echo"}]}]}]
    _, headers, data = s.post("/v1/messages", {"stream": True, "messages": msgs, "tools": tools})
    [call] = _tool_uses(_sse(headers, data))
    assert call["name"] == "mcp__mcp-tether-recorder__echo"
    assert call["input"] == {"text": "mcp-tether call main/0/0"}
    msgs += [{"role": "assistant", "content": [{k: call[k] for k in ("type", "id", "name",
                                                                      "input")}]},
             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call["id"],
                                           "content": "mcp-tether call main/0/0"}]}]
    _, headers, data = s.post("/v1/messages", {"stream": True, "messages": msgs, "tools": tools})
    text = [ev["delta"]["text"] for name, ev in _sse(headers, data)
            if name == "content_block_delta"]
    assert text == ["done [mcp-tether step 1]"]
    results = [e for e in s.events() if e["what"] == "model-result"]
    assert [(r["kind"], r["ok"]) for r in results] == [("search", True), ("call", True)]


def test_the_responses_stand_in_spawns_waits_and_closes_by_the_hosts_ids(standin: Any) -> None:
    """Codex's shapes: MCP tools in a namespace, agent tools in another. 1. The stream:
    response.created, item added/done pairs, response.completed with the items. 2. A
    spawn's message carries the agent's mark; the wait and the close name the id the
    host returned for it. 3. A non-streamed request gets one JSON response."""
    s = standin.start({"agents": {"main": [{"call": 1, "spawn": ["A"]}, {"wait": ["A"]},
                                           {"close": ["A"]}, {"say": "done"}],
                                  "A": [{"say": "A done"}]}})
    tools = [{"type": "namespace", "name": "mcp__mcp_tether_recorder",
              "tools": [{"type": "function", "name": "echo"}]},
             {"type": "namespace", "name": "multi_agent_v1",
              "tools": [{"type": "function", "name": n}
                        for n in ("spawn_agent", "wait_agent", "close_agent")]}]
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "[mcp-tether agent main] go"}]}]

    def turn() -> list[dict[str, Any]]:
        _, headers, data = s.post("/v1/responses", {"stream": True, "input": items,
                                                    "tools": tools})
        events = _sse(headers, data)
        names = [e for e, _ in events]
        assert names[0] == "response.created" and names[-1] == "response.completed"
        done = [ev["item"] for e, ev in events if e == "response.output_item.done"]
        assert events[-1][1]["response"]["output"] == done
        return done

    first = turn()
    assert [(i["namespace"], i["name"]) for i in first] == [
        ("mcp__mcp_tether_recorder", "echo"), ("multi_agent_v1", "spawn_agent")]
    assert "[mcp-tether agent A]" in json.loads(first[1]["arguments"])["message"]
    items += first + [
        {"type": "function_call_output", "call_id": first[0]["call_id"],
         "output": "mcp-tether call main/0/0"},
        {"type": "function_call_output", "call_id": first[1]["call_id"],
         "output": json.dumps({"agent_id": "agent-7", "nickname": "Ada"})}]
    [wait] = turn()
    assert (wait["name"], json.loads(wait["arguments"])["targets"]) == ("wait_agent",
                                                                       ["agent-7"])
    items += [wait, {"type": "function_call_output", "call_id": wait["call_id"],
                     "output": "{}"}]
    [close] = turn()
    assert (close["name"], json.loads(close["arguments"])) == ("close_agent",
                                                              {"target": "agent-7"})
    _, headers, data = s.post("/v1/responses", {"input": items + [close], "tools": tools})
    assert headers["content-type"] == "application/json"
    assert json.loads(data)["status"] == "completed"


def test_a_gated_step_is_answered_only_once_its_gate_opens(standin: Any) -> None:
    """1. The request of a gated step waits (the host sees a model thinking). 2. POST
    /mcp-tether/gate/NAME opens it: the turn comes. 3. A request with no agent mark (a
    host's side request) gets plain text at once, gate or not."""
    s = standin.start({"agents": {"main": [{"gate": "g", "say": "through"}]}})
    got: list[bytes] = []
    body = {"messages": [{"role": "user", "content": "[mcp-tether agent main]"}],
            "stream": True}
    t = threading.Thread(target=lambda: got.append(s.post("/v1/messages", body)[2]))
    t.start()
    until(lambda: any(e["what"] == "model-gate" for e in s.events()), "the gate", 10)
    side = s.post("/v1/messages", {"messages": [{"role": "user", "content": "title?"}]})
    assert json.loads(side[2])["content"] == [{"type": "text", "text": "ok"}]
    assert not got
    assert s.post("/mcp-tether/gate/g", {})[0] == 200
    t.join(30)
    assert b"through [mcp-tether step 0]" in got[0]


def test_a_script_is_checked_before_anything_starts(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """A bad script: one line and exit 2; --example prints one that parses."""
    assert subprocess.run([sys.executable, "-m", "mcp_tether.hostcheck.modelapi", "--example"],
                          capture_output=True, check=True).stdout.startswith(b"{")
    for bad, why in (({"agents": {}}, "main"), ({"agents": {"main": [{"jump": 1}]}}, "jump"),
                     ({"agents": {"main": [{"spawn": ["Z"]}]}}, "'Z'")):
        with pytest.raises(ValueError, match=why):
            Script.parse(bad)
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"agents": {"main": [{"call": -1}]}}))
    proc = subprocess.run([sys.executable, "-m", "mcp_tether.hostcheck.modelapi", "--script",
                           str(path)], capture_output=True, text=True)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1


def test_the_habit_is_read_from_which_copy_answered_which_agent() -> None:
    """shared, per-agent, mixed; unknown with one agent."""
    assert habit_of({"main": [5], "A": [5], "B": [5]}) == "shared"
    assert habit_of({"main": [5], "A": [7], "B": [9]}) == "per-agent"
    assert habit_of({"main": [5], "A": [5, 7]}) == "mixed"
    assert habit_of({"main": [5], "A": []}) == "unknown"


def test_measure_says_what_closing_an_agent_and_ending_the_old_copy_did() -> None:
    """From events alone: A's calls on copy 7, closed at t=5, its copy's SIGTERM at 5.01;
    copy 5 (main's) ended at t=8; main's next call failed."""
    def turn(t: float, agent: str, step: int, calls: list[dict[str, Any]]) -> dict[str, Any]:
        return {"what": "model-turn", "t": t, "agent": agent, "step": step, "calls": calls}

    def call(i: str, text: str) -> dict[str, Any]:
        return {"id": i, "kind": "call", "text": text}

    model = [turn(1, "main", 0, [call("c1", "mcp-tether call main/0/0")]),
             turn(2, "A", 0, [call("c2", "mcp-tether call A/0/0")]),
             turn(5, "main", 1, [{"id": "c3", "kind": "close", "agent": "A"}]),
             turn(9, "main", 2, [call("c4", "mcp-tether call main/2/0")]),
             {"what": "model-result", "id": "c1", "ok": True, "result": "x"},
             {"what": "model-result", "id": "c2", "ok": True, "result": "x"},
             {"what": "model-result", "id": "c4", "ok": False, "result": "Transport closed"}]
    rec = [{"what": "start", "role": "server", "pid": 5, "t": 0.5},
           {"what": "start", "role": "server", "pid": 7, "t": 1.5},
           {"what": "call", "role": "server", "pid": 5, "t": 1.1,
            "text": "mcp-tether call main/0/0"},
           {"what": "call", "role": "server", "pid": 7, "t": 2.1,
            "text": "mcp-tether call A/0/0"},
           {"what": "signal", "role": "server", "pid": 7, "t": 5.01, "signal": "SIGTERM"}]
    facts = measure(model, rec, [{"what": "end-old", "t": 8.0, "pid": 5, "outcome": "sent"}],
                    end=10.0)
    assert facts["habit"] == "per-agent"
    [close] = facts["closes"]
    assert (close["agent"], close["how"], close["copy"]) == ("A", "closed", 7)
    assert [g["what"] for g in close["got"]] == ["SIGTERM"]
    assert facts["end_old"]["agents"] == ["main"]
    assert facts["end_old"]["next"]["ok"] is False
    assert [c["text"] for c in facts["failed"]] == ["mcp-tether call main/2/0"]


@pytest.mark.slow
@pytest.mark.parametrize(("api", "copies", "habit"), [
    ("anthropic", "shared", "shared"), ("openai", "per-agent", "per-agent")])
def test_subagents_measure_the_hosts_own_habit(api: str, copies: str, habit: str) -> None:
    """The same scenario on a host that shares one copy and on one that starts a copy per
    agent (and SIGTERMs it when the agent is closed): the habit measured is the host's.
    Ending the oldest copy fails the main agent's next call only where it had its own."""
    result = check([*AGENT_HOST, "--api", api, "--copies", copies, "--on-close", "sigterm",
                    "--", "{server}"], scenarios=["subagents"], model_api=api,
                   model_env=["MODEL_URL"], min_age=1.0, ready_timeout=60, host_timeout=20)
    row = result.results[0]
    assert row["verdict"] == "measured", row["detail"]
    facts = row["calls"]
    assert facts["habit"] == habit, row["detail"]
    assert set(facts["per_agent"]) == {"main", "A", "B"}
    if habit == "shared":
        assert len(facts["copies"]) == 1 and not facts["failed"]
        assert facts["end_old"]["copy"] is None  # one copy: nothing ended
        assert all(not c["got"] for c in facts["closes"])
    else:
        assert len(facts["copies"]) == 3
        closed = {c["agent"]: [g["what"] for g in c["got"]] for c in facts["closes"]}
        assert closed == {"A": ["SIGTERM"], "B": ["SIGTERM"]}, row["detail"]
        assert facts["end_old"]["agents"] == ["main"]
        assert facts["end_old"]["next"]["ok"] is False
    assert result.exit_code == 0


@pytest.mark.slow
def test_idle_shows_the_copy_kept_across_a_pause_longer_than_min_age(
        capsys: pytest.CaptureFixture[str]) -> None:
    """Through the CLI, --json: the call after the pause went to the same copy."""
    code = main(["hostcheck", "--json", "-s", "idle", "--min-age", "1", "--model-api",
                 "anthropic", "--model-env", "MODEL_URL", "--", *AGENT_HOST, "--api",
                 "anthropic", "--copies", "shared", "--", "{server}"])
    doc = json.loads(capsys.readouterr().out)
    [row] = doc["results"]
    assert code == 0 and row["verdict"] == "measured", row["detail"]
    [gap] = row["calls"]["gaps"]
    assert gap["gap"] > 1.0 and gap["after"] == gap["before"]


def test_the_model_options_are_refused_where_they_do_not_apply(
        capsys: pytest.CaptureFixture[str]) -> None:
    """No model API for a tool-calling scenario, or model options without one: exit 2."""
    host = [sys.executable, "-c", "pass", "{server}"]
    assert main(["hostcheck", "-s", "idle", "--", *host]) == 2
    assert main(["hostcheck", "--model-api", "openai", "-s", "exit", "--", *host]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "--model-api" in err[0]


REAL = {"claude-code": ("claude", ["-p", "{prompt}"], "shared"),
        "codex": ("codex", ["exec", "--skip-git-repo-check", "{prompt}"], "per-agent")}


@pytest.mark.slow
@pytest.mark.parametrize("host", sorted(REAL))
def test_a_real_host_is_driven_offline_through_its_tool_calls(host: str) -> None:
    """Claude Code and Codex, where installed: the subagents scenario in a network
    namespace of its own (loopback only: nothing can leave the machine) measures the
    habit their code has (Claude Code: one shared copy; Codex: one per agent)."""
    cmd, argv, habit = REAL[host]
    if shutil.which(cmd) is None:
        pytest.skip(f"{cmd} is not installed (npm install @anthropic-ai/claude-code@2.1.332 "
                    "/ @openai/codex@0.171.0, on PATH)")
    if shutil.which("unshare") is None or shutil.which("ip") is None or subprocess.run(
            ["unshare", "--net", "true"], capture_output=True).returncode != 0:
        pytest.skip("no network namespace here (unshare --net, ip): not run online")
    script = ("ip link set lo up && exec " + " ".join([
        sys.executable, "-m", "mcp_tether", "hostcheck", "--json", "-q", "--host", host,
        "-s", "subagents", "--min-age", "2", "--ready-timeout", "120", "--host-timeout", "60",
        "--", cmd, *[f"'{a}'" for a in argv]]))
    proc = subprocess.run(["unshare", "--net", "bash", "-c", script], capture_output=True,
                          text=True, timeout=600, env={**os.environ})
    row = json.loads(proc.stdout)["results"][0]
    assert row["verdict"] == "measured", row["detail"]
    assert row["calls"]["habit"] == habit, row["detail"]
