"""The reconnect scenario on hosts that reconnect on a command: the config file a host
also writes is merged into, the scope to write is chosen, what the host asks first is
seeded, and keys are typed into its terminal after the edit, each when the screen shows
what it waits for."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import main
from mcp_tether.errors import UsageError
from mcp_tether.hostcheck import check
from mcp_tether.hostcheck.config import ENTRY_NAME, write_recorder
from mcp_tether.hostcheck.keys import KeyStep, parse, screen_text, shown
from mcp_tether.hostcheck.spec import RECORDER

pytestmark = pytest.mark.linux

HOSTS = Path(__file__).resolve().parent / "hostcheck_hosts"
FAST = {"settle": 0.5, "ready_timeout": 60.0, "host_timeout": 10.0}
KEYED = [sys.executable, str(HOSTS / "reconnect_host.py"), "--on-key", "--config", ".mcp.json"]


def _argv(tmp_path: Path, *extra: str) -> list[str]:
    return [sys.executable, RECORDER, "--events", str(tmp_path), *extra]


def test_the_edit_keeps_the_keys_a_host_wrote_into_its_own_file(tmp_path: Path) -> None:
    """1. The recorder goes into ~/.claude.json. 2. The host writes keys of its own
    there, and one more server. 3. The reconnect's edit changes the entry only."""
    home, project = tmp_path / "home", tmp_path / "project"
    place = write_recorder("claude-code", home, project, _argv(tmp_path))
    assert place.path == home / ".claude.json"
    doc = json.loads(place.path.read_text())
    doc["numStartups"] = 3
    doc["mcpServers"]["other"] = {"command": "other-server"}
    place.path.write_text(json.dumps(doc))
    place.edit(_argv(tmp_path, "--generation", "2"))
    after = json.loads(place.path.read_text())
    assert after["numStartups"] == 3
    assert after["mcpServers"]["other"] == {"command": "other-server"}
    assert after["mcpServers"][ENTRY_NAME]["args"][-2:] == ["--generation", "2"]
    assert after["hasCompletedOnboarding"] is True  # what NEEDS seeded is kept too


def test_claude_code_gets_its_dialogs_answered_in_the_throwaway_home(tmp_path: Path) -> None:
    """--host claude-code: onboarding done, the project trusted, the custom key's last 20
    characters approved (as Claude Code's own "Yes" writes them), and the project's
    server approved in its .claude/settings.local.json."""
    home, project = tmp_path / "home", tmp_path / "project"
    key = "sk-ant-dummy-0123456789abcdefghijklmnop"
    write_recorder("claude-code", home, project, _argv(tmp_path), scope="project",
                   env={"ANTHROPIC_API_KEY": key})
    state = json.loads((home / ".claude.json").read_text())
    assert state["hasCompletedOnboarding"] is True
    assert state["projects"][os.path.realpath(project)]["hasTrustDialogAccepted"] is True
    assert state["customApiKeyResponses"]["approved"] == [key[-20:]]
    local = json.loads((project / ".claude" / "settings.local.json").read_text())
    assert local == {"enabledMcpjsonServers": [ENTRY_NAME]}
    # 2. With no key in the host's environment, no key is written.
    write_recorder("claude-code", tmp_path / "h2", project, _argv(tmp_path), env={})
    assert "customApiKeyResponses" not in json.loads((tmp_path / "h2" / ".claude.json")
                                                     .read_text())


def test_the_scope_picks_the_hosts_user_or_project_file(tmp_path: Path) -> None:
    """1. project: Claude Code's .mcp.json in the project. 2. user: ~/.claude.json.
    3. No such scope for the host, or an unknown one: one line."""
    home, project = tmp_path / "home", tmp_path / "project"
    argv = _argv(tmp_path)
    assert write_recorder("claude-code", home, project, argv, scope="project").path \
        == project / ".mcp.json"
    assert write_recorder("claude-code", home, project, argv, scope="user").path \
        == home / ".claude.json"
    with pytest.raises(UsageError, match="project-scope"):
        write_recorder("claude-desktop", home, project, argv, scope="project")
    with pytest.raises(UsageError, match="host-scope"):
        write_recorder("claude-code", home, project, argv, scope="global")


def test_steps_parse_keys_by_name_and_refuse_what_cannot_be_typed() -> None:
    """1. Named keys and <lt>; a wait's white space normalized. 2. Bad steps: one line."""
    assert parse(["keys=/mcp<Enter>", "wait=  Manage \n MCP ", "keys=<Down><lt>x"]) == [
        KeyStep("keys", "/mcp\r"), KeyStep("wait", "Manage MCP"), KeyStep("keys", "\x1b[B<x")]
    for bad, why in (("keys=<Home>", "unknown key"), ("press=x", "wait=TEXT"),
                     ("wait=  ", "nothing to wait for")):
        with pytest.raises(UsageError, match=why):
            parse([bad])


def test_screen_text_reads_a_tui_redraw_as_the_words_it_shows() -> None:
    """A differential redraw (cursor moves, colours) of a menu reads as its words."""
    raw = (b"\x1b[2D\x1b[5B\r\x1b[2C\x1b[5A \x1b[8GView tools\r\x1b[2C\x1b[1B"
           b"\x1b[38;5;153m\xe2\x9d\xaf\x1b[8GReconnect\x1b[39m\r\r\n\x1b]0;title\x07")
    assert shown(raw, "\u276f Reconnect")
    assert "title" not in screen_text(raw)


def test_after_edit_needs_a_pty_and_valid_steps(capsys: pytest.CaptureFixture[str]) -> None:
    """Refused before anything starts: keys without --pty, a bad step, a scope without
    --host."""
    host = [sys.executable, "-c", "pass"]
    with pytest.raises(UsageError, match="--pty"):
        check(host, host="claude-code", scenarios=["reconnect"], after_edit=["keys=x"])
    with pytest.raises(UsageError, match="unknown key"):
        check(host, host="claude-code", pty=True, after_edit=["keys=<Nope>"])
    assert main(["hostcheck", "--host-scope", "user", "--", *host, "{server}"]) == 2
    assert "--host-scope" in capsys.readouterr().err


def test_a_host_that_reconnects_on_a_typed_command_is_driven_by_the_steps() -> None:
    """A host under a pty that reloads .mcp.json only when `reload` is typed.
    1. No steps: no reconnect (skipped). 2. wait=ready>, keys=reload<Enter>: it starts
    the new copy and drops the old one (abandoned); `ps` finds the old copy abandoned."""
    common = {"host": "claude-code", "scope": "project", "pty": True,
              "scenarios": ["reconnect"], **FAST}
    idle = check([*KEYED, "--abandon"], **{**common, "host_timeout": 2.0})
    assert idle.results[0]["verdict"] == "skipped", idle.results[0]["detail"]
    steps = ["wait=ready>", "keys=reload<Enter>"]
    result = check([*KEYED, "--abandon"], after_edit=steps, **common)
    row = result.results[0]
    assert row["verdict"] == "abandoned", row["detail"]
    assert row["host_config"].endswith("/project/.mcp.json")
    assert row["after_edit"] == steps
    assert [e["keys"] for e in row["events"] if e["what"] == "keys"] == ["reload\r"]
    old = {x["pid"] for x in row["left"] if x["role"] == "server"}
    assert {p["state"] for p in row["ps"] if p["pid"] in old} == {"abandoned"}, row["ps"]


def test_a_host_that_keeps_using_its_new_copy_shows_the_old_one_superseded() -> None:
    """The same host pinging the copy it uses every second: over the window `ps` looks
    every 0.5 s and sees the new copy quiet, then read, again and again, while the
    dropped one has no traffic: the old copy is `superseded`, the new one is not."""
    result = check([*KEYED, "--abandon", "--ping", "1"], host="claude-code",
                   scope="project", pty=True, scenarios=["reconnect"],
                   after_edit=["wait=ready>", "keys=reload<Enter>"],
                   **{**FAST, "settle": 4.0})
    row = result.results[0]
    assert row["verdict"] == "abandoned", row["detail"]
    old = {x["pid"] for x in row["left"] if x["role"] == "server"}
    got = {p["pid"]: p for p in row["ps"]}
    assert {got[p]["state"] for p in old} == {"superseded"}, row["ps"]
    assert all("newer copy pid" in got[p]["superseded_why"] for p in old), row["ps"]
    assert {p["state"] for pid, p in got.items() if pid not in old} <= {"live", "abandoned"}


def test_a_wait_the_screen_never_satisfies_stops_the_steps_and_says_so() -> None:
    """wait=TEXT that never shows: the keys after it are not typed, the row says which
    text was missing (skipped: no reconnect)."""
    result = check([*KEYED], host="claude-code", scope="project", pty=True,
                   scenarios=["reconnect"], after_edit=["wait=never shown", "keys=reload<Enter>"],
                   **{**FAST, "host_timeout": 2.0})
    row = result.results[0]
    assert row["verdict"] == "skipped"
    assert "'never shown'" in row["detail"]
    assert not [e for e in row["events"] if e["what"] == "keys"]
