"""`ps` remembers the host configs' matchers between scans, and never uses a stale answer.

Each test builds a fake home with real config files, lets the index be written (the
racy window set to 0 so that a file written a moment ago may be remembered), changes one
input the way a user would, and checks that the next scan sees the change.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tether.scan import config_index, match


class Home:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "home"
        self.project = root / "project"
        self.cache = root / "cache"
        for d in (self.home, self.project):
            d.mkdir()

    def claude(self, **servers: list[str]) -> Path:
        """~/.claude.json with `name=[command, *args]` stdio servers."""
        path = self.home / ".claude.json"
        path.write_text(json.dumps({"mcpServers": {
            name: {"command": argv[0], "args": argv[1:]} for name, argv in servers.items()}}))
        return path

    def index(self) -> Path:
        return Path(config_index.index_path())


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Home]:
    h = Home(tmp_path)
    monkeypatch.setenv("HOME", str(h.home))
    monkeypatch.setenv("XDG_CACHE_HOME", str(h.cache))
    for var in ("XDG_CONFIG_HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "OPENCODE_CONFIG"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(h.project)
    yield h


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the real discoveries (an answer from the index is not one)."""
    made: list[int] = []
    real = match._discovered

    def counting(observed: object) -> tuple[list[tuple[object, ...]], list[str]]:
        made.append(1)
        return real(observed)

    monkeypatch.setattr(match, "_discovered", counting)
    return made


def names() -> list[str]:
    matchers, _ = match.load_config(None, None, None, None)
    return sorted(m.name for m in matchers)


def test_an_unchanged_machine_is_answered_from_the_index(
    home: Home, calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_index, "RACY_NS", 0)
    home.claude(weather=["npx", "-y", "@acme/weather"])
    assert names() == ["weather"] and calls == [1]
    assert home.index().is_file()
    assert oct(home.index().stat().st_mode & 0o777) == "0o600"
    assert names() == ["weather"] and calls == [1]  # second scan: no discovery


def test_an_entry_added_to_a_remembered_file_is_seen(
    home: Home, calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_index, "RACY_NS", 0)
    home.claude(weather=["npx", "-y", "@acme/weather"])
    assert names() == ["weather"]
    home.claude(weather=["npx", "-y", "@acme/weather"], notes=["uvx", "notes-mcp"])
    assert names() == ["notes", "weather"] and calls == [1, 1]


def test_a_config_file_that_appears_is_seen(
    home: Home, calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_index, "RACY_NS", 0)
    assert names() == []
    (home.project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "local": {"command": "python", "args": ["server.py"]}}}))
    assert names() == ["local"] and calls == [1, 1]


def test_a_changed_environment_variable_that_discovery_read_is_seen(
    home: Home, calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """CLAUDE_CONFIG_DIR moves Claude Code's user file: the index recorded it as unset."""
    monkeypatch.setattr(config_index, "RACY_NS", 0)
    home.claude(weather=["npx", "-y", "@acme/weather"])
    assert names() == ["weather"]
    other = home.root / "claude-dir"
    other.mkdir()
    (other / ".claude.json").write_text(json.dumps({"mcpServers": {
        "moved": {"command": "node", "args": ["x.js"]}}}))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(other))
    assert names() == ["moved"] and calls == [1, 1]


def test_a_new_folder_in_a_listed_folder_is_seen(
    home: Home, calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """VS Code profiles are found by listing User/profiles: a new profile is a new file."""
    monkeypatch.setattr(config_index, "RACY_NS", 0)
    profiles = home.home / ".config" / "Code" / "User" / "profiles"
    profiles.mkdir(parents=True)
    assert names() == []
    (profiles / "abc123").mkdir()
    (profiles / "abc123" / "mcp.json").write_text(json.dumps({"servers": {
        "profiled": {"type": "stdio", "command": "node", "args": ["p.js"]}}}))
    assert names() == ["profiled"] and calls == [1, 1]


def test_another_working_directory_is_another_answer(
    home: Home, calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_index, "RACY_NS", 0)
    (home.project / ".mcp.json").write_text(json.dumps({"mcpServers": {
        "local": {"command": "python", "args": ["server.py"]}}}))
    assert names() == ["local"]
    elsewhere = home.root / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert names() == [] and calls == [1, 1]


def test_a_file_changed_within_the_racy_window_is_not_remembered(
    home: Home, calls: list[int]
) -> None:
    """Written just now: a same-size edit within the timestamp granularity could go
    unseen, so nothing is written and the next scan looks again."""
    home.claude(weather=["npx", "-y", "@acme/weather"])
    assert names() == ["weather"]
    assert not home.index().exists()
    assert names() == ["weather"] and calls == [1, 1]


def test_an_index_writable_by_others_or_not_json_is_ignored(
    home: Home, calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_index, "RACY_NS", 0)
    home.claude(weather=["npx", "-y", "@acme/weather"])
    assert names() == ["weather"] and calls == [1]
    home.index().chmod(0o666)
    assert names() == ["weather"] and calls == [1, 1]  # not trusted: looked again
    home.index().write_bytes(b"\x00garbage")
    home.index().chmod(0o600)
    assert names() == ["weather"] and calls == [1, 1, 1]


def test_an_unwritable_cache_folder_is_no_error(
    home: Home, calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config_index, "RACY_NS", 0)
    monkeypatch.setenv("XDG_CACHE_HOME", "/dev/null/cache")  # a file: no folder below it
    home.claude(weather=["npx", "-y", "@acme/weather"])
    assert names() == ["weather"] and names() == ["weather"] and calls == [1, 1]


def test_a_changed_source_file_of_ours_invalidates_the_index(
    home: Home, calls: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The code that made the answer is an input: a recorded module file whose signature
    changed (an upgrade, a new host module) means discovery runs again."""
    monkeypatch.setattr(config_index, "RACY_NS", 0)
    home.claude(weather=["npx", "-y", "@acme/weather"])
    assert names() == ["weather"]
    doc = config_index._load(str(home.index()), config_index._key())
    import mcp_tether.hosts.claude_code as mod

    assert mod.__file__ in doc["paths"]
    doc["paths"][mod.__file__] = "absent"  # as if that module's file had been replaced
    config_index._store(str(home.index()), doc)
    assert names() == ["weather"] and calls == [1, 1]


def test_a_ps_answered_from_the_index_does_not_load_the_hosts_package(home: Home) -> None:
    """The point of the index: `ps` on an unchanged machine skips host discovery (the
    hosts package with pathlib and re). Two real `ps --json` runs in fresh interpreters."""
    cfg = home.claude(weather=["npx", "-y", "@acme/weather"])
    old = cfg.stat().st_mtime_ns - 10_000_000_000  # ctime stays new: see RACY below
    os.utime(cfg, ns=(old, old))
    code = ("import sys, io\n"
            "from mcp_tether.scan import config_index\n"
            "config_index.RACY_NS = 0\n"
            "from mcp_tether import cli\n"
            "out = io.StringIO(); sys.stdout = out\n"
            "rc = cli.main(['ps', '--json'])\n"
            "sys.stdout = sys.__stdout__\n"
            "print(rc, 'mcp_tether.hosts' in sys.modules, 'pathlib' in sys.modules)\n")
    env = {**os.environ, "HOME": str(home.home), "XDG_CACHE_HOME": str(home.cache)}
    first, second = (subprocess.run([sys.executable, "-c", code], env=env, cwd=home.project,
                                    capture_output=True, text=True, check=True,
                                    stdin=subprocess.DEVNULL).stdout.split()
                     for _ in range(2))
    assert first[:2] == ["0", "True"], first
    assert second == ["0", "False", "False"], second
