"""Servers x hosts is derived from the two measurements by one rule (pure: no processes)."""

from __future__ import annotations

import json

from mcp_tether.survey.hosts import derive, join, parse_hostcheck_json, parse_hosts_md, to_html

HOSTS_MD = """\
## Hosts whose code we know

| host | exit | sigkill | why |
|---|---|---|---|
| Python SDK `stdio_client` (`py_sdk_host.py`) | `clean` | `server-left` | killpg |
| bad host (`bad_host.py`) | `wrapper-child-left` | `server-left` | a fixture |

The TypeScript SDK host in all five scenarios, by hand (`x`,
the file copied):

| scenario | verdict | host exit | server saw | server | grandchild |
|---|---|---|---|---|---|
| exit | **wrapper-child-left** | 4467 | EOF on stdin at 2410 ms, SIGTERM at 4402 ms | gone | left |
| sigkill | **server-left** | 3313 | stdout closed (EPIPE), EOF on stdin at 3312 ms | - | - |

### Claude Code 2.1.197 `claude mcp list` (npm `@anthropic-ai/claude-code`)

| scenario | verdict | host exit | server saw | server | grandchild |
|---|---|---|---|---|---|
| exit | **wrapper-child-left** | 11435 ms | SIGINT at 9275 ms (no EOF before it) | gone | left |
| reconnect | skipped | no reconnect | | | |
"""
GOOD = {"node": {"close": "exited", "crash": "exited", "sigint": "exited"},
        "python": {"close": "exited", "crash": "exited"}}
ESCAPES = {"node": {"close": "orphaned", "crash": "orphaned", "sigint": "killed"},
           "python": {"close": "orphaned", "crash": "lingered"}}


def _hosts() -> dict:
    return {h.name.split()[0]: h for h in parse_hosts_md(HOSTS_MD)}


def test_both_table_shapes_are_read_and_test_fixtures_are_no_hosts() -> None:
    hosts = _hosts()
    assert set(hosts) == {"Python", "TypeScript", "Claude"}
    assert hosts["Python"].style == "python" and hosts["TypeScript"].style == "node"
    assert hosts["TypeScript"].events["exit"].verdict == "wrapper-child-left"
    assert "SIGTERM" in hosts["TypeScript"].events["exit"].saw


def test_each_host_verdict_is_decided_by_the_survey_scenario_that_sends_the_same() -> None:
    h = _hosts()
    # 1. a host that ends its group: gone, unless the server left the group.
    assert derive(GOOD, h["Python"], "exit").state == "gone"
    assert derive(ESCAPES, h["Python"], "exit").state == "left"
    # 2. EOF, then SIGTERM to the direct child: the node style's close.
    assert derive(GOOD, h["TypeScript"], "exit").state == "gone"
    assert derive(ESCAPES, h["TypeScript"], "exit").state == "left"
    # 3. the host died, the server got EOF only: the style's crash.
    assert derive(ESCAPES, h["Python"], "sigkill").state == "late"
    assert derive(ESCAPES, h["TypeScript"], "sigkill").state == "left"
    # 4. SIGINT to the direct child, no EOF: sigint; outliving it, whether the host then
    #    SIGKILLs was not measured.
    assert derive(GOOD, h["Claude"], "exit").state == "gone"
    assert derive(ESCAPES, h["Claude"], "exit").state == "?"
    # 5. nothing measured or a skipped scenario: unknown.
    assert derive(GOOD, h["Claude"], "reconnect").state == "?"
    assert derive(GOOD, h["TypeScript"], "reconnect").state == "?"


def test_a_hostcheck_json_host_joins_and_unprobed_rows_stay_empty() -> None:
    lines = "\n".join(json.dumps(r) for r in [
        {"scenario": "exit", "verdict": "server-left",
         "recorded": [{"role": "server", "pid": 5, "what": "eof", "t_ms": 10}]},
    ])
    h = parse_hostcheck_json("Some Node host", lines, "x.jsonl")
    survey = {"rows": [{"label": "a", "status": "ok", "verdicts": ESCAPES},
                       {"label": "b", "status": "needs-service", "verdicts": {}}]}
    j = join(survey, [h])
    assert j.rows[0]["cells"]["Some Node host"]["exit"].state == "left"
    assert j.rows[1]["cells"]["Some Node host"]["exit"].state == "—"
    assert "<table>" in to_html(j) and "LEFT" in to_html(j)


def test_the_join_reads_a_survey_document_and_skips_fixture_and_variant_hosts() -> None:
    """The survey's `--json` document keeps its rows under `results`; a fixture host's row
    and a paragraph about a variant of a host above are not hosts of their own."""
    md = HOSTS_MD + """
| host | exit | sigkill | why |
|---|---|---|---|
| one-shot host (`oneshot_host.py`) | `wrapper-child-left` | `server-left` | a fixture |
| the same, `--early` | | | a variant |

The same careful host on another transport, all five scenarios:

| scenario | verdict | host exit | server saw |
|---|---|---|---|
| exit | **clean** | 1 ms | EOF |
"""
    names = {h.name.split()[0] for h in parse_hosts_md(md)}
    assert names == {"Python", "TypeScript", "Claude"}
    h = parse_hostcheck_json("Some Node host", json.dumps({"results": [
        {"scenario": "exit", "verdict": "server-left", "recorded": []}]}), "x.json")
    j = join({"results": [{"label": "a", "status": "ok", "verdicts": ESCAPES}]}, [h])
    assert [r["label"] for r in j.rows] == ["a"]
