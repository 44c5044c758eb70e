"""`probe --host/--config`: every configured server probed at once, one summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import main

pytestmark = pytest.mark.linux
MINI = str(Path(__file__).parent / "servers" / "mini.py")


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(
        "{\n  // a JSONC comment, as hosts allow\n  \"mcpServers\": {\n"
        f'    "good": {{"command": {json.dumps(sys.executable)},'
        f' "args": ["-S", {json.dumps(MINI)}]}},\n'
        f'    "lingering": {{"command": {json.dumps(sys.executable)},'
        f' "args": ["-S", {json.dumps(MINI)}, "--thread"]}},\n'
        '    "missing": {"command": "no-such-server-anywhere"},\n'
        '    "remote": {"url": "https://example.invalid/mcp"}\n'
        "  }\n}\n"
    )
    return cfg


def test_every_configured_server_is_probed_and_a_broken_one_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a config with a good, a lingering, a missing and a remote server;
    2. one JSON summary: verdicts for the two that run, an error row, a skipped row."""
    code = main(["probe", "--config", str(_config(tmp_path)), "--yes", "--json",
                 "-s", "close,exit", "--window", "0.5", "--grace", "0.3", "--term-grace", "0.3"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["passed"] is False
    by = {s["name"]: {r["scenario"]: r for r in s["results"]} for s in out["results"]}
    good = {sc: r["verdict"] for sc, r in by["good"].items()}
    assert good == {"close": "exited", "exit": "exited"}
    assert by["lingering"]["exit"]["verdict"] == "orphaned"
    assert by["missing"]["*"]["verdict"] == "error"
    assert "command not found" in by["missing"]["*"]["detail"]
    assert by["remote"]["*"]["verdict"] == "skipped"


def test_probing_configured_servers_asks_first_and_refuses_without_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", open("/dev/null"))  # noqa: SIM115  # closed by pytest
    assert main(["probe", "--config", str(_config(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "will start these servers for real" in err and "--yes" in err


def test_a_malformed_config_is_a_one_line_error_with_its_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": {"command": "a",}\n')
    assert main(["probe", "--config", str(bad), "--yes"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:" in err and "Traceback" not in err


# --- starting each server the way its host would --------------------------------------

CHECKER = '''\
import os, sys
# Started the VS Code way: envFile loaded, env expanded, cwd resolved, or exit 3.
want = {"FROM_ENV_FILE": "yes", "HOME_SEEN": os.path.expanduser("~"), "QUOTED": "a b"}
got = {k: os.environ.get(k) for k in want}
if got != want or os.getcwd() != sys.argv[2]:
    sys.stderr.write(f"wrong start: {got} cwd={os.getcwd()}\\n")
    sys.exit(3)
os.execv(sys.executable, [sys.executable, "-S", sys.argv[1]])
'''


def _vscode_project(tmp_path: Path) -> tuple[Path, Path]:
    project = tmp_path / "project"
    (project / "tools").mkdir(parents=True)
    (project / "tools" / "check.py").write_text(CHECKER)
    (project / ".env").write_text('# dotenv\nexport FROM_ENV_FILE=yes\nQUOTED="a b"\n')
    cfg = project / ".vscode" / "mcp.json"
    cfg.parent.mkdir()
    cfg.write_text(
        "{\n  // workspace servers\n  \"servers\": {\n"
        '    "tools": {"type": "stdio", "command": ' + json.dumps(sys.executable) + ",\n"
        '      "args": ["${workspaceFolder}/tools/check.py", ' + json.dumps(MINI)
        + ', "${workspaceFolder}${/}tools"],\n'
        '      "cwd": "${workspaceFolder}/tools",\n'
        '      "envFile": "${workspaceFolder}/.env",\n'
        '      "env": {"HOME_SEEN": "${userHome}"}},\n'
        '    "secret": {"type": "stdio", "command": "node", "args": ["s.js"],\n'
        '      "env": {"KEY": "${input:api-key}"}},\n'
        '    "off": {"type": "stdio", "command": "node", "disabled": true},\n'
        '    "gh": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}\n'
        "  }\n}\n"
    )
    return project, cfg


def test_a_vscode_server_with_workspace_folder_and_env_file_probes_as_vscode_starts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. `.vscode/mcp.json` using ${workspaceFolder}, ${/}, ${userHome}, envFile and cwd;
    2. the server (which exits 3 unless started exactly so) passes close and exit;
    3. ${input:...} is an error row naming the variable; disabled and remote entries are
       listed, not started, and not counted as passed."""
    _, cfg = _vscode_project(tmp_path)
    code = main(["probe", "--config", str(cfg), "--yes", "--json", "-s", "close,exit",
                 "--window", "1", "--grace", "2", "--term-grace", "1"])
    out = json.loads(capsys.readouterr().out)
    by = {s["name"]: {r["scenario"]: r for r in s["results"]} for s in out["results"]}
    # Started wrongly, the checker exits 3 at once: error / early-exit. Started right,
    # mini.py answers and exits on EOF (how fast is the server's business, not ours).
    assert set(by["tools"]) == {"close", "exit"}
    for r in by["tools"].values():
        assert r["verdict"] not in ("error", "early-exit"), r
    assert by["secret"]["*"]["verdict"] == "error"
    assert "${input:api-key}" in by["secret"]["*"]["detail"]
    assert by["off"]["*"]["verdict"] == "disabled" and not by["off"]["*"]["passed"]
    assert by["gh"]["*"]["verdict"] == "skipped" and not by["gh"]["*"]["passed"]
    assert code == 1 and out["passed"] is False  # the ${input} row is a real problem


def test_disabled_and_remote_entries_alone_do_not_make_a_run_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With nothing runnable there is nothing to pass: a usage error, not success."""
    cfg = tmp_path / "mcp.json"
    cfg.write_text('{"mcpServers": {"off": {"command": "x", "disabled": true},'
                   ' "r": {"url": "https://x"}}}')
    assert main(["probe", "--config", str(cfg), "--yes"]) == 2
    assert "nothing to probe" in capsys.readouterr().err


def test_claude_code_defaults_expand_and_a_missing_variable_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`${VAR:-default}` takes the default; `${VAR}` unset is an error row naming it."""
    monkeypatch.delenv("MCP_TETHER_UNSET_VAR", raising=False)
    cfg = tmp_path / ".mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {
        "ok": {"command": "${MCP_TETHER_PY:-" + sys.executable + "}", "args": ["-S", MINI]},
        "bad": {"command": sys.executable, "args": ["${MCP_TETHER_UNSET_VAR}"]}}}))
    code = main(["probe", "--config", str(cfg), "--yes", "--json", "-s", "close",
                 "--window", "1", "--grace", "2", "--term-grace", "1"])
    out = json.loads(capsys.readouterr().out)
    by = {s["name"]: s["results"] for s in out["results"]}
    assert by["ok"][0]["verdict"] not in ("error", "early-exit")
    assert by["bad"][0]["verdict"] == "error"
    assert "${MCP_TETHER_UNSET_VAR}" in by["bad"][0]["detail"] and code == 1


def test_an_entry_behind_the_guard_is_probed_with_the_guard_in_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`python -m mcp_tether run --grace 1 -- python mini.py` runs as the host runs it,
    guard included (what the host runs is what is judged), and the result says it is
    guarded."""
    cfg = tmp_path / "m.json"
    cfg.write_text(json.dumps({"mcpServers": {"g": {"command": sys.executable, "args": [
        "-m", "mcp_tether", "run", "--grace", "1", "--", sys.executable, "-S", MINI]}}}))
    main(["probe", "--config", str(cfg), "--yes", "--json", "-s", "close",
          "--window", "1", "--grace", "2", "--term-grace", "1"])
    out, err = capsys.readouterr()
    assert "-m mcp_tether run --grace 1 --" in err  # the plan shown: the guard in front
    (server,) = json.loads(out)["results"]
    (result,) = server["results"]
    assert server["guarded"] is True and result["guarded"] is True, result
    assert result["verdict"] not in ("error", "early-exit"), result


def test_a_server_name_with_a_lone_surrogate_is_probed_and_reported_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`"\\ud800x"` is a valid JSON name: the row carries it escaped, text and JSON alike."""
    cfg = tmp_path / "m.json"
    cfg.write_text('{"mcpServers": {"\\ud800x": {"command": ' + json.dumps(sys.executable)
                   + ', "args": ["-S", ' + json.dumps(MINI) + "]}}}")
    for fmt in (["--json"], []):
        main(["probe", "--config", str(cfg), "--yes", *fmt, "-s", "close",
              "--window", "1", "--grace", "2", "--term-grace", "1"])
        out, err = capsys.readouterr()
        assert "\\udc" in out or "\\ud800" in out
        assert "Traceback" not in err


def test_html_and_markdown_of_a_config_have_one_section_per_server_and_never_pass_unprobed_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--html/--markdown with --config: each server its own section with its timelines;
    a failed one carries its diagnosis; error, disabled and remote entries are shown as
    such (not probed), never as passed."""
    cfg = _config(tmp_path)
    data = cfg.read_text().replace(
        '"missing":', '"off": {"command": "x", "disabled": true},\n    "missing":')
    cfg.write_text(data)
    html, md = tmp_path / "p.html", tmp_path / "p.md"
    code = main(["probe", "--config", str(cfg), "--yes", "-s", "close,exit",
                 "--window", "0.5", "--grace", "0.3", "--term-grace", "0.3",
                 "--html", str(html), "--markdown", str(md)])
    capsys.readouterr()
    assert code == 1
    page, summary = html.read_text(), md.read_text()
    for name in ("good", "lingering", "missing", "off", "remote"):
        assert page.count(f"<h2>{name}") == 1, name
        assert summary.count(f"### {name}") == 1, name
    sections = {s.split("</h2>", 1)[0].split(":", 1)[0]: s for s in page.split("<h2>")[1:]}
    assert 'data-verdict="orphaned"' in sections["lingering"]
    assert "Does not exit on stdin EOF" in sections["lingering"]
    assert "2/2 passed" in sections["good"] and 'data-what="handshake"' in sections["good"]
    for name, verdict in (("missing", "error"), ("off", "disabled"), ("remote", "skipped")):
        assert f'data-verdict="{verdict}"' in sections[name], name
        assert "not probed" in sections[name] and "passed" not in sections[name].split(
            "</p>", 1)[0], name
    md_sections = {s.split("\n", 1)[0].split(":", 1)[0]: s for s in summary.split("### ")[1:]}
    assert "**Diagnosis.** Does not exit on stdin EOF" in md_sections["lingering"]
    assert "not probed (disabled)" in md_sections["off"]
    assert "passed" not in md_sections["remote"].split("|", 1)[0]


def test_a_host_without_a_config_file_is_told_so_with_the_paths_searched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    assert main(["probe", "--host", "cursor", "--yes"]) == 2
    err = capsys.readouterr().err
    assert "no config file of cursor found; searched:" in err
    assert str(tmp_path / ".cursor" / "mcp.json") in err


def test_an_unknown_server_name_lists_the_names_there_are(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["probe", "--config", str(_config(tmp_path)), "--server", "godo",
                 "--yes"]) == 2
    err = capsys.readouterr().err
    assert "no server named godo; there are: good, lingering" in err


# --- the Python API: probe_configured(entries, options) -> report ---------------------


def test_probe_configured_returns_typed_results_and_neither_asks_nor_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. the entries of a config, read by `hosts`; 2. `probe_configured` with the
    probe's options: one ServerResult per server, in the CLI's order (config errors,
    probed, not run), no prompt and no output; 3. its dict is the CLI's --json."""
    from mcp_tether import hosts
    from mcp_tether.probe import ConfiguredOptions, ProbeOptions, probe_configured

    entries, errors = hosts.configured_servers(config=_config(tmp_path))
    assert not errors
    fast = ProbeOptions(scenarios=("close", "exit"), window=0.5, grace=0.3, term_grace=0.3)
    report = probe_configured(entries, ConfiguredOptions(fast))
    assert capsys.readouterr() == ("", "")
    by = {s.label: s for s in report.servers}
    assert list(by) == ["missing", "good", "lingering", "remote"]
    assert by["good"].meets == "spec" and by["good"].passes("spec")
    assert {r.scenario: r.verdict for r in by["good"].results} == {
        "close": "exited", "exit": "exited"}
    assert by["lingering"].meets == "none" and not by["lingering"].passes("spec")
    assert by["missing"].probed and by["missing"].results[0].verdict == "error"
    assert not by["remote"].probed and by["remote"].meets == "skipped"
    assert report.passed is False
    assert report.to_dict()["servers"][1] == by["good"].to_dict()


def test_plan_configured_says_what_would_start_without_starting_anything(
    tmp_path: Path
) -> None:
    """The plan is the host's argv (variables expanded) or the reason it is not run."""
    from mcp_tether import hosts
    from mcp_tether.probe import plan_configured

    entries, _ = hosts.configured_servers(config=_config(tmp_path))
    planned = {p.label: p for p in plan_configured(entries)}
    assert planned["good"].runnable and planned["good"].argv == [sys.executable, "-S", MINI]
    assert planned["missing"].verdict == "error"
    assert "command not found" in planned["missing"].detail
    assert (planned["remote"].verdict, planned["remote"].argv) == ("skipped", [])
