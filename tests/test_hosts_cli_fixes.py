"""Smaller things a newcomer or an attacker would meet in wrap, hosts, ps and inspect:
each file once, a host name for a --config file, a missing --tether, an empty command,
a package.json that is not JSON."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from hosts_helpers import TETHER
from mcp_tether.cli import main

PROJECT = '{"mcpServers": {"a": {"command": "node", "args": ["x.js"]}, "b": {"command": ""}}}\n'


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME and a project folder (not version-controlled) with a `.mcp.json`, the cwd."""
    home, proj = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    proj.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("MCP_TETHER_STATE_DIR", str(tmp_path / "state"))
    for var in ("XDG_CONFIG_HOME", "APPDATA", "CLAUDE_CONFIG_DIR", "COPILOT_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(proj)
    (proj / ".mcp.json").write_text(PROJECT)
    return proj / ".mcp.json"


@pytest.mark.parametrize("action", ["wrap", "unwrap"])
def test_a_project_file_read_by_several_hosts_is_shown_and_changed_once(
    project: Path, action: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """`.mcp.json` is read by Claude Code, VS Code and Copilot CLI: one diff, one status."""
    if action == "unwrap":
        assert main(["wrap", "--config", str(project), "--tether", TETHER]) == 0
        capfd.readouterr()
    argv = [action, "--host", "claude-code", "--host", "vscode", "--host", "copilot-cli"]
    assert main([*argv, "--dry-run", *(["--tether", TETHER] if action == "wrap" else [])]) == 0
    out, err = capfd.readouterr()
    assert out.count(f"--- {project}") == 1, out
    assert err.count(f"{project}: {action}") == 1, err
    assert main([*argv, "--dry-run", "--json"]) == 0
    assert len(json.loads(capfd.readouterr().out)["results"]) == 1


def test_an_empty_command_is_skipped_with_a_reason_never_wrapped(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    assert main(["wrap", "--config", str(project), "--tether", TETHER]) == 0
    err = capfd.readouterr().err
    assert 'skipped b: empty "command": nothing to run' in err
    entry = json.loads(project.read_text())["mcpServers"]["b"]
    assert entry == {"command": ""}
    assert main(["hosts", "--config", str(project)]) == 0
    assert "(empty command: skipped)" in capfd.readouterr().out


def test_wrap_with_a_missing_tether_path_says_so_in_one_line_and_exits_2(
    project: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    before = project.read_bytes()
    assert main(["wrap", "--config", str(project), "--tether", "/nonexistent/mcp-tether"]) == 2
    err = capfd.readouterr().err
    assert err.strip() == "mcp-tether wrap: --tether /nonexistent/mcp-tether: no such file"
    assert project.read_bytes() == before


def test_a_config_file_of_no_known_host_is_never_shown_with_an_empty_host_name(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`hosts --config` and `ps` (a server matched to that file's entry)."""
    from mcp_tether.scan.render import what_text

    cfg = tmp_path / "servers.json"
    cfg.write_text('{"mcpServers": {"a": {"command": "node", "args": ["x.js"]}}}')
    assert main(["hosts", "--config", str(cfg)]) == 0
    first = capfd.readouterr().out.splitlines()[0]
    assert first == f"any host (config) {cfg}"
    what = SimpleNamespace(package=None, version=None, sdk=None, sdk_version=None)
    server = SimpleNamespace(what=what, config=[{"host": "", "name": "a", "path": str(cfg)}],
                             host=None, guess=False)
    assert what_text(server) == "servers.json/a"  # type: ignore[arg-type]  # duck-typed


def test_inspect_names_a_package_json_that_is_not_json(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "package.json").write_text('{"name": "x",\n')
    assert main(["inspect", str(tmp_path)]) == 2
    err = capfd.readouterr().err.strip()
    assert err.startswith(f"mcp-tether inspect: {tmp_path / 'package.json'}:2:1: not JSON")
    assert "\n" not in err
