"""wrap never breaks what it wraps: hazards skipped with a reason, shared trees left alone,
nested guards recognised, and bad input a one-line error, never a traceback or a hang."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import hosts_helpers
from hosts_helpers import TETHER
from mcp_tether import hosts
from mcp_tether.cli import main
from mcp_tether.hosts import atomic

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"

state_dir = hosts_helpers.state_dir  # autouse: backups under tmp_path


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def machine(tmp_path: Path) -> hosts.Machine:
    return hosts.Machine("linux", tmp_path / "home", {"PATH": os.environ["PATH"]},
                         tmp_path / "project", tmp_path / "system")


def skips(res: hosts.ChangeResult) -> dict[str, str]:
    return dict(res.skipped)


# --- what wrapping would break -------------------------------------------------------


def test_zed_remote_entries_are_skipped_unless_forced(tmp_path: Path) -> None:
    """`"remote": true` runs on the remote machine: skipped with the reason; --force wraps."""
    p = write(tmp_path / "settings.json", json.dumps({"context_servers": {
        "far": {"command": "sh", "args": ["-c", "x"], "remote": True},
        "near": {"command": "sh", "args": ["-c", "x"]}}}))
    res = hosts.wrap(p, "zed", TETHER, dry_run=True, machine=machine(tmp_path))
    assert res.changed == ["near"]
    assert "remote machine" in skips(res)["far"]
    forced = hosts.wrap(p, "zed", TETHER, dry_run=True, force=True, machine=machine(tmp_path))
    assert sorted(forced.changed) == ["far", "near"]


def test_vscode_dev_debug_entries_are_skipped(tmp_path: Path) -> None:
    """VS Code's dev.debug attaches to node/python itself: wrapping would break it."""
    p = write(tmp_path / "mcp.json", json.dumps({"servers": {
        "dbg": {"type": "stdio", "command": "sh", "dev": {"debug": {"type": "node"}}},
        "watch": {"type": "stdio", "command": "sh", "dev": {"watch": "src/**"}}}}))
    res = hosts.wrap(p, "vscode", TETHER, dry_run=True, machine=machine(tmp_path))
    assert res.changed == ["watch"] and "dev.debug" in skips(res)["dbg"]


def test_claude_code_managed_command_allowlist_skips_every_entry(tmp_path: Path) -> None:
    """A managed allowedMcpServers with serverCommand rules matches command+args exactly."""
    m = machine(tmp_path)
    p = write(tmp_path / ".claude.json", json.dumps({"mcpServers": {"s": {"command": "sh"}}}))
    assert hosts.wrap(p, "claude-code", TETHER, dry_run=True, machine=m).changed == ["s"]
    write(tmp_path / "system/etc/claude-code/managed-settings.json", json.dumps(
        {"allowedMcpServers": [{"serverCommand": ["sh"]}, {"serverName": "x"}]}))
    res = hosts.wrap(p, "claude-code", TETHER, dry_run=True, machine=m)
    assert res.changed == [] and "allowedMcpServers" in skips(res)["s"]
    # Names only, or the admin allowed the wrapped form: wrapping is fine.
    write(tmp_path / "system/etc/claude-code/managed-settings.json", json.dumps(
        {"allowedMcpServers": [{"serverCommand": ["mcp-tether", "run", "--", "sh"]}]}))
    assert hosts.wrap(p, "claude-code", TETHER, dry_run=True, machine=m).changed == ["s"]


@pytest.mark.parametrize("command,args,reason", [
    ("no-such-server-anywhere", [], "command not found here"),
    ("/nonexistent/bin/srv", [], "not found here"),
    ("cmd", ["/c", "npx", "-y", "pkg"], "cmd /c"),
    ("npx -y @modelcontextprotocol/server-memory", [], "has spaces"),
])
def test_commands_that_cannot_run_here_are_skipped_not_wrapped_into_127(
    tmp_path: Path, command: str, args: list[str], reason: str
) -> None:
    """Wrapping a command that cannot start would only move the failure into the guard."""
    p = write(tmp_path / "m.json", json.dumps({"mcpServers": {"s": {"command": command,
                                                                   "args": args}}}))
    res = hosts.wrap(p, "cursor", TETHER, machine=machine(tmp_path))
    assert not res.written and reason in skips(res)["s"]


def test_a_command_with_a_variable_is_not_judged_runnable_or_not(tmp_path: Path) -> None:
    """`${workspaceFolder}/bin/srv` is the host's to expand: wrap it (args keep it)."""
    p = write(tmp_path / "m.json", json.dumps({"servers": {"s": {
        "type": "stdio", "command": "${workspaceFolder}/bin/srv"}}}))
    assert hosts.wrap(p, "vscode", TETHER, dry_run=True, machine=machine(tmp_path)).changed == ["s"]


# --- shared trees --------------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake HOME and a git work tree as the current folder, with a committed .mcp.json."""
    home, project = tmp_path / "home", tmp_path / "project"
    shutil.copytree(FIXTURES / "project", project)
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "XDG_STATE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(project)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=m"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "init"], check=True)
    return project


def git_status(repo: Path) -> str:
    return subprocess.run(["git", "status", "--porcelain", "--ignored"], cwd=repo,
                          capture_output=True, text=True, check=True).stdout


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_project_files_in_a_git_tree_are_left_alone_without_project(
    repo: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """1. wrap --host claude-code: the committed .mcp.json is untouched, no file appears;
    2. with --project: only .mcp.json changes, naming `mcp-tether` portably, the backup
       is in the state folder; 3. unwrap --project restores it to the committed bytes."""
    assert main(["wrap", "--host", "claude-code", "--tether", TETHER, "--force"]) == 0
    assert "version-controlled tree" in capfd.readouterr().err
    assert git_status(repo) == ""
    assert main(["wrap", "--host", "claude-code", "--tether", TETHER, "--force",
                 "--project"]) == 0
    assert git_status(repo) == " M .mcp.json\n"
    entry = json.loads((repo / ".mcp.json").read_text())["mcpServers"]["shared-memory"]
    assert entry["command"] == "mcp-tether" and entry["args"][:2] == ["run", "--"]
    assert TETHER not in (repo / ".mcp.json").read_text()
    assert atomic.backups_of((repo / ".mcp.json").resolve())
    assert main(["unwrap", "--host", "claude-code", "--project"]) == 0
    assert git_status(repo) == ""


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_hosts_says_that_a_project_file_in_a_git_tree_needs_project(
    repo: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`hosts` in a work tree: its wrap hint says those files need --project (the
    suggested command alone would leave them as they are); in a plain folder it does not."""
    assert main(["hosts", "--host", "claude-code"]) == 0
    assert "unless you add --project" in capfd.readouterr().err
    shutil.rmtree(repo / ".git")
    assert main(["hosts", "--host", "claude-code"]) == 0
    err = capfd.readouterr().err
    assert "not wrapped" in err and "--project" not in err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_config_named_inside_a_git_tree_also_needs_project(repo: Path) -> None:
    """`--config` of a file in a work tree is a shared file too."""
    res = hosts.wrap(repo / ".cursor/mcp.json", "cursor", TETHER, force=True)
    assert res.refused and not res.written and git_status(repo) == ""


# --- an entry already behind the guard -----------------------------------------------


@pytest.mark.parametrize("argv", [
    ["mcp-tether", "run", "--grace", "1", "--", "srv", "-v"],
    ["/usr/bin/mcp-tether", "run", "--term-grace=3", "--", "srv", "-v"],
    ["python3", "-m", "mcp_tether", "run", "--", "srv", "-v"],
    ["uvx", "mcp-tether", "run", "srv", "-v"],
])
def test_an_entry_behind_the_guard_with_options_is_not_wrapped_again(
    tmp_path: Path, argv: list[str]
) -> None:
    """No nested guard; the inner command is known; unwrap takes the guard out."""
    p = write(tmp_path / "m.json", json.dumps({"mcpServers": {"s": {
        "command": argv[0], "args": argv[1:]}}}))
    (entry,) = hosts.read_servers(p, "cursor")
    assert entry.wrapped and entry.guarded_argv == ["srv", "-v"]
    res = hosts.wrap(p, "cursor", TETHER, force=True)
    assert res.skipped == [("s", "already wrapped")] and not res.written
    hosts.unwrap(p, "cursor")
    assert json.loads(p.read_text()) == {"mcpServers": {"s": {"command": "srv", "args": ["-v"]}}}


# --- bad input -----------------------------------------------------------------------


def bad_configs(tmp_path: Path) -> dict[str, Path]:
    out = {
        "huge-int": write(tmp_path / "huge.json",
                          '{"mcpServers": {"s": {"command": "x", "n": ' + "9" * 5000 + "}}}"),
        "surrogate-name": write(tmp_path / "sur.json",
                                '{"mcpServers": {"\\ud800x": {"command": "sh"}}}'),
        "surrogate-key": write(tmp_path / "surkey.json",
                               '{"mcpServers": {"s": {"command": "sh", "\\udfff": 1}}}'),
    }
    loop = tmp_path / "loop.json"
    loop.symlink_to(tmp_path / "loop2.json")
    (tmp_path / "loop2.json").symlink_to(loop)
    out["symlink-loop"] = loop
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    out["fifo"] = fifo
    return out


@pytest.mark.parametrize("case", ["huge-int", "symlink-loop", "fifo"])
@pytest.mark.parametrize("command", [["hosts"], ["wrap", "--force", "--tether", TETHER],
                                     ["unwrap"], ["probe", "--yes"]])
def test_unreadable_configs_are_a_one_line_error_never_a_traceback_or_hang(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], case: str, command: list[str]
) -> None:
    """A 5000-digit number, a symlink loop, a FIFO: exit 2 and one line naming the file."""
    path = bad_configs(tmp_path)[case]
    assert main([*command, "--config", str(path)]) == 2
    err = capfd.readouterr().err
    assert str(path) in err and "Traceback" not in err


@pytest.mark.parametrize("case", ["surrogate-name", "surrogate-key"])
def test_lone_surrogates_in_names_and_keys_do_not_crash_listing_or_wrapping(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], case: str
) -> None:
    """A `\\ud800` escape is valid JSON: list it (escaped), wrap and unwrap it exactly."""
    path = bad_configs(tmp_path)[case]
    original = path.read_bytes()
    assert main(["hosts", "--config", str(path)]) == 0
    assert main(["wrap", "--config", str(path), "--tether", TETHER]) == 0
    assert main(["unwrap", "--config", str(path)]) == 0
    assert path.read_bytes() == original
    assert "Traceback" not in capfd.readouterr().err
