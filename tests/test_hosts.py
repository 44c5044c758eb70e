"""Host configs: discovery on fake machines, every host's shape, and byte-exact rewrites."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

import hosts_helpers
from hosts_helpers import TETHER
from mcp_tether import hosts
from mcp_tether.cli import main
from mcp_tether.errors import ConfigError
from mcp_tether.hosts import atomic, jsonc

state_dir = hosts_helpers.state_dir  # autouse: backups under tmp_path

CURSOR_WITH_REMOTE = '{"mcpServers": {"a": {"command": "x"}, "r": {"url": "u"}}}'


def write(path: Path, text: str, newline: str = "\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.replace("\n", newline).encode("utf-8"))
    return path


def values(path: Path) -> Any:
    return jsonc.loads(path.read_bytes().decode("utf-8").lstrip("\ufeff"))


@pytest.fixture
def fake_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME and a cwd under tmp_path; the real ones are never looked at."""
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_CONFIG_HOME", "APPDATA", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.chdir(project)
    return home


# --- where the files are -------------------------------------------------------------


def places(platform: str, home: Path, env: dict[str, str], cwd: Path | None = None
           ) -> dict[tuple[str, str], list[Path]]:
    out: dict[tuple[str, str], list[Path]] = {}
    for c in hosts.config_locations(platform, home, env, cwd):
        out.setdefault((c.host, c.scope), []).append(c.path)
    return out


def test_platform_paths_follow_each_os_convention(tmp_path: Path) -> None:
    """One function maps (platform, home, env) to every host's files."""
    home = tmp_path
    linux = places("linux", home, {})
    assert home / ".cursor/mcp.json" in linux["cursor", "user"]
    assert home / ".config/zed/settings.json" in linux["zed", "user"]
    linux_paths = [c.path for c in hosts.config_locations("linux", home, {})]
    assert home / ".config/Code/User/mcp.json" in linux_paths
    assert home / ".config/Code - Insiders/User/mcp.json" in linux_paths
    assert home / ".codeium/windsurf/mcp_config.json" in linux["windsurf", "user"]
    assert linux["claude-code", "user"] == [home / ".claude.json"]

    mac = [c.path for c in hosts.config_locations("darwin", home, {})]
    support = home / "Library/Application Support"
    assert support / "Claude/claude_desktop_config.json" in mac
    assert support / "Code/User/mcp.json" in mac
    assert home / ".config/zed/settings.json" in mac

    appdata = tmp_path / "Roaming"
    win = [c.path for c in hosts.config_locations("win32", home, {"APPDATA": str(appdata)})]
    assert appdata / "Claude/claude_desktop_config.json" in win
    assert appdata / "Code/User/mcp.json" in win
    assert appdata / "Zed/settings.json" in win

    xdg = [c.path for c in hosts.config_locations("linux", home, {"XDG_CONFIG_HOME": "/x"})]
    assert Path("/x/zed/settings.json") in xdg

    proj = tmp_path / "p"
    project = places("linux", home, {}, proj)
    assert project["claude-code", "project"] == [proj / ".mcp.json"]
    assert project["cursor", "project"] == [proj / ".cursor/mcp.json"]
    assert proj / ".vscode/mcp.json" in project["vscode", "project"]
    assert project["zed", "project"] == [proj / ".zed/settings.json"]


def test_discover_returns_only_files_that_exist_filtered_by_host(tmp_path: Path) -> None:
    """Missing files are not reported; `host` narrows the list; project files count."""
    home, cwd = tmp_path / "h", tmp_path / "p"
    write(home / ".cursor/mcp.json", '{"mcpServers": {}}')
    write(cwd / ".cursor/mcp.json", '{"mcpServers": {}}')
    write(home / ".config/zed/settings.json", "{}")
    found = hosts.discover(home=home, cwd=cwd, env={}, platform="linux")
    assert {(c.host, c.scope) for c in found} == {
        ("cursor", "user"),
        ("cursor", "project"),
        ("zed", "user"),
    }
    only = hosts.discover("zed", home=home, cwd=cwd, env={}, platform="linux")
    assert [c.path for c in only] == [home / ".config/zed/settings.json"]
    with pytest.raises(ValueError):
        hosts.discover("notepad", home=home, cwd=cwd, env={}, platform="linux")


def test_a_fake_home_is_not_escaped_through_the_real_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `home` given and no `env`, a real XDG_CONFIG_HOME is not followed."""
    elsewhere = tmp_path / "real-xdg"
    write(elsewhere / "zed/settings.json", "{}")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(elsewhere))
    home = tmp_path / "h"
    write(home / ".config/zed/settings.json", "{}")
    found = hosts.discover("zed", home=home, cwd=tmp_path, platform="linux")
    assert [c.path for c in found] == [home / ".config/zed/settings.json"]


# --- every host's shape --------------------------------------------------------------


def by_label(entries: list[hosts.ServerEntry]) -> dict[str, hosts.ServerEntry]:
    return {e.label: e for e in entries}


def test_claude_desktop_entries_are_read_with_env(tmp_path: Path) -> None:
    """`mcpServers` of {command, args, env}; an entry with no args reads as []."""
    p = write(
        tmp_path / "claude_desktop_config.json",
        '{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}},'
        ' "bare": {"command": "/bin/srv"}}, "globalShortcut": ""}',
    )
    got = by_label(hosts.read_servers(p, "claude-desktop"))
    assert got["fs"].command == "npx" and got["fs"].args == ["-y", "pkg"]
    assert got["fs"].env == {"K": "v"} and got["fs"].transport == "stdio"
    assert got["fs"].key_path == ("mcpServers", "fs")
    assert got["bare"].args == [] and not got["bare"].wrapped


def test_claude_code_reads_user_and_local_scope_from_one_file(tmp_path: Path) -> None:
    """Top-level `mcpServers` and every `projects[dir].mcpServers`, named per project."""
    p = write(
        tmp_path / ".claude.json",
        json.dumps(
            {
                "numStartups": 3,
                "mcpServers": {"u": {"type": "stdio", "command": "uvx", "args": ["a"]}},
                "projects": {
                    "/work/x": {
                        "allowedTools": [],
                        "mcpServers": {
                            "loc": {"type": "stdio", "command": "node", "args": ["s.js"]},
                            "web": {"type": "http", "url": "https://example.com/mcp"},
                        },
                    },
                    "/work/y": {"mcpServers": {}},
                },
            },
            indent=2,
        ),
    )
    got = by_label(hosts.read_servers(p, "claude-code"))
    assert set(got) == {"u", "loc [/work/x]", "web [/work/x]"}
    assert got["loc [/work/x]"].key_path == ("projects", "/work/x", "mcpServers", "loc")
    assert got["loc [/work/x]"].command == "node"
    assert got["web [/work/x]"].transport == "remote"


def test_cursor_remote_entries_are_listed_as_remote_not_errors(tmp_path: Path) -> None:
    """An entry with `url` and no command is remote; stdio entries beside it are read."""
    p = write(
        tmp_path / "mcp.json",
        '{"mcpServers": {"r": {"url": "https://x/sse"}, "s": {"type": "stdio", '
        '"command": "python", "args": ["-m", "srv"], "cwd": "/srv"}}}',
    )
    got = by_label(hosts.read_servers(p, "cursor"))
    assert got["r"].transport == "remote" and got["r"].command is None
    assert got["s"].transport == "stdio" and got["s"].cwd == "/srv"


def test_vscode_uses_servers_and_ignores_inputs(tmp_path: Path) -> None:
    """VS Code's key is `servers`; typed http entries are remote; variables stay literal."""
    p = write(
        tmp_path / ".vscode/mcp.json",
        """{
  "inputs": [{"type": "promptString", "id": "key", "password": true}],
  "servers": {
    "gh": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"},
    "local": {"type": "stdio", "command": "node", "args": ["${workspaceFolder}/s.js"],
              "env": {"KEY": "${input:key}"}}
  }
}""",
    )
    got = by_label(hosts.read_servers(p, "vscode"))
    assert got["gh"].transport == "remote"
    assert got["local"].args == ["${workspaceFolder}/s.js"]
    assert got["local"].env == {"KEY": "${input:key}"}
    assert hosts.read_servers(p, "cursor") == []  # cursor's shape has no `servers`


def test_windsurf_server_url_is_remote_and_disabled_is_reported(tmp_path: Path) -> None:
    """Windsurf's `serverUrl` means remote; `disabled: true` is carried through."""
    p = write(
        tmp_path / "mcp_config.json",
        '{"mcpServers": {"r": {"serverUrl": "https://x"}, '
        '"off": {"command": "srv", "disabled": true}}}',
    )
    got = by_label(hosts.read_servers(p, "windsurf"))
    assert got["r"].transport == "remote"
    assert got["off"].disabled and got["off"].transport == "stdio"


def test_zed_settings_with_comments_and_the_older_command_object(tmp_path: Path) -> None:
    """JSONC `context_servers`: plain, older {command: {path, args, env}}, extension-only."""
    p = write(
        tmp_path / "settings.json",
        """// Zed settings
{
  "theme": "One Dark",
  "context_servers": {
    "new": {"command": "npx", "args": ["-y", "srv"], "env": {}},  // current form
    "old": {"source": "custom", "command": {"path": "uvx", "args": ["old-srv"],
            "env": {"A": "1"}}},
    "ext": {"source": "extension", "settings": {}},
  },
}""",
    )
    got = by_label(hosts.read_servers(p, "zed"))
    assert got["new"].command == "npx"
    assert got["old"].command == "uvx" and got["old"].args == ["old-srv"]
    assert got["old"].env == {"A": "1"}
    assert got["ext"].transport == "remote"


def test_a_config_of_unknown_host_is_read_by_shape(tmp_path: Path) -> None:
    """With no host, any known table shape is found."""
    p = write(tmp_path / "x.json", '{"context_servers": {"z": {"command": "a"}}}')
    assert [e.name for e in hosts.read_servers(p)] == ["z"]


def test_configured_servers_returns_errors_beside_the_entries_of_good_files(
    fake_home: Path,
) -> None:
    """One malformed file does not hide the others: its error comes back separately."""
    write(fake_home / ".cursor/mcp.json", '{"mcpServers": {"a": {"command": "x"}}}')
    write(fake_home / ".codeium/windsurf/mcp_config.json", '{"mcpServers": {,}}')
    entries, errors = hosts.configured_servers(home=fake_home, env={}, platform="linux")
    assert [e.name for e in entries] == ["a"]
    assert len(errors) == 1 and errors[0].line == 1 and errors[0].column == 17


# --- wrap and unwrap -----------------------------------------------------------------

REALISTIC = {
    "claude-desktop-pretty": (
        "claude-desktop",
        """{
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/Users/me/Desktop"
      ]
    },
    "noargs": {
      "command": "/usr/local/bin/my-server",
      "env": {"TOKEN": "s3cr\\u00e9t"}
    },
    "py": {"command": "uv", "args": ["run", "--directory", "/srv", "main.py"], "cwd": "/srv"}
  },
  "globalShortcut": "Ctrl+Space"
}
""",
        "\n",
    ),
    "zed-jsonc-crlf-tabs": (
        "zed",
        """// Zed settings, CRLF and tabs
{
\t"buffer_font_size": 15,
\t"context_servers": {
\t\t/* a block comment */
\t\t"a": {
\t\t\t"command": "node", // the runtime
\t\t\t"args": [
\t\t\t\t"server.js",
\t\t\t],
\t\t},
\t\t"b": {"source": "custom", "command": {"path": "uvx", "env": {}}},
\t\t"c": { "command": "x", "args": [ ] , },
\t},
}""",
        "\r\n",
    ),
    "claude-code-local-scope-minified": (
        "claude-code",
        '{"mcpServers":{"u":{"type":"stdio","command":"uvx","args":["a"],"env":{}}},'
        '"projects":{"/w":{"mcpServers":{"l":{"type":"stdio","command":"srv"},'
        '"h":{"type":"http","url":"https://x"}}}}}',
        "\n",
    ),
    "cursor-odd-indent-args-first": (
        "cursor",
        """\ufeff{
     "mcpServers" :
     {
        "weird" : {   "args" :   [  "--port",   "0" ]  ,
                      "command" :   "C:\\\\Tools\\\\srv.exe"   },
        "r": {"url": "https://x"}
     }
}
""",
        "\n",
    ),
    "vscode-servers": (
        "vscode",
        """{
    "servers": {
        "local": {
            "type": "stdio",
            "command": "python3",
            "args": ["-m", "mcp_srv"],
            "env": {"PYTHONUNBUFFERED": "1"},
        }
    },
    "inputs": []
}""",
        "\n",
    ),
}


@pytest.mark.parametrize("case", sorted(REALISTIC))
def test_unwrap_after_wrap_gives_back_the_file_byte_for_byte(tmp_path: Path, case: str) -> None:
    """1. wrap a realistic file; 2. unwrap it; 3. the bytes equal the original."""
    host, text, newline = REALISTIC[case]
    p = write(tmp_path / "cfg.json", text, newline)
    original = p.read_bytes()

    wrapped = hosts.wrap(p, host, TETHER, force=True)
    assert wrapped.written and wrapped.changed
    assert p.read_bytes() != original
    hosts.jsonc.parse(p.read_bytes().decode().lstrip("\ufeff"))  # still valid JSONC

    back = hosts.unwrap(p, host)
    assert back.written and sorted(back.changed) == sorted(wrapped.changed)
    assert p.read_bytes() == original


@pytest.mark.parametrize("case", sorted(REALISTIC))
def test_wrap_puts_the_guard_in_front_and_keeps_everything_else(
    tmp_path: Path, case: str
) -> None:
    """Each stdio entry becomes tether run -- old argv; every other value is unchanged."""
    host, text, newline = REALISTIC[case]
    p = write(tmp_path / "cfg.json", text, newline)
    before = {e.key_path: e for e in hosts.read_servers(p, host)}
    before_values = values(p)
    hosts.wrap(p, host, TETHER, force=True)
    after = {e.key_path: e for e in hosts.read_servers(p, host)}
    assert after.keys() == before.keys()
    for key, old in before.items():
        new = after[key]
        if old.transport == "remote":
            assert new == old
            continue
        assert new.wrapped and new.command == TETHER
        assert new.args == ["run", "--", old.command, *old.args]
        assert (new.env, new.cwd, new.disabled) == (old.env, old.cwd, old.disabled)
    # Outside the server tables nothing moved (line endings kept: no bare \n added).
    raw = p.read_bytes()
    if newline == "\r\n":
        assert raw.count(b"\n") == raw.count(b"\r\n")
    assert set(values(p)) == set(before_values)


def test_wrapped_file_reads_cleanly_with_json_when_it_was_strict_json(tmp_path: Path) -> None:
    """Strict JSON stays strict JSON (Claude Desktop parses with JSON.parse)."""
    host, text, _ = REALISTIC["claude-desktop-pretty"]
    p = write(tmp_path / "cfg.json", text)
    hosts.wrap(p, host, TETHER, force=True)
    cfg = json.loads(p.read_text())
    assert cfg["mcpServers"]["noargs"] == {
        "command": TETHER,
        "args": ["run", "--", "/usr/local/bin/my-server"],
        "env": {"TOKEN": "s3cr\u00e9t"},
    }
    assert list(cfg) == ["mcpServers", "globalShortcut"]


def test_wrapping_twice_is_the_same_as_wrapping_once(tmp_path: Path) -> None:
    """The second wrap skips every entry as already wrapped and writes nothing."""
    host, text, _ = REALISTIC["zed-jsonc-crlf-tabs"]
    p = write(tmp_path / "settings.json", text, "\r\n")
    hosts.wrap(p, host, TETHER, force=True)
    once = p.read_bytes()
    again = hosts.wrap(p, host, TETHER, force=True)
    assert p.read_bytes() == once
    assert not again.written and not again.changed and again.diff == ""
    assert {reason for _, reason in again.skipped} == {"already wrapped"}


def test_unwrap_leaves_entries_that_were_never_wrapped(tmp_path: Path) -> None:
    """unwrap of a bare file is a no-op naming each entry as not wrapped."""
    p = write(tmp_path / "m.json", '{"mcpServers": {"a": {"command": "x"}}}')
    res = hosts.unwrap(p, "cursor")
    assert res.skipped == [("a", "not wrapped")] and not res.written


def test_unwrap_also_undoes_a_hand_written_wrap(tmp_path: Path) -> None:
    """A wrap typed by hand (other spacing) is undone to the equivalent value."""
    p = write(
        tmp_path / "m.json",
        '{"mcpServers": {"a": {"command": "/x/mcp-tether", "args": ["run","--","srv","-v"]}}}',
    )
    hosts.unwrap(p, None)
    assert values(p) == {"mcpServers": {"a": {"command": "srv", "args": ["-v"]}}}


def test_dry_run_shows_the_diff_and_leaves_the_file_and_folder_alone(tmp_path: Path) -> None:
    """No write, no backup, no temp file: only the diff text comes back."""
    p = write(tmp_path / "m.json", '{\n  "mcpServers": {"a": {"command": "x"}}\n}\n')
    before = p.read_bytes()
    res = hosts.wrap(p, "cursor", TETHER, dry_run=True, force=True)
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.json"]  # not even the state folder
    assert not res.written and res.changed == ["a"] and res.backup is None
    assert f'+  "mcpServers": {{"a": {{"command": "{TETHER}", "args": [ "run"' in res.diff
    assert res.diff.startswith(f"--- {p}\n+++ {p} (wrapped)\n")


def test_a_backup_is_written_first_and_never_overwritten(tmp_path: Path) -> None:
    """1. wrap: .bak (in the state folder) holds the original; 2. unwrap: .bak.1 holds
    the wrapped file; 3. wrap again: the file differs from the newest backup, so .bak.2."""
    p = write(tmp_path / "m.json", '{"mcpServers": {"a": {"command": "x"}}}')
    original = p.read_bytes()
    first = hosts.wrap(p, "cursor", TETHER, force=True)
    folder = atomic.backup_dir(p.resolve())
    assert first.backup == folder / "m.json.bak"
    assert first.backup.read_bytes() == original
    wrapped = p.read_bytes()
    second = hosts.unwrap(p, "cursor")
    assert second.backup == folder / "m.json.bak.1"
    assert second.backup.read_bytes() == wrapped
    assert first.backup.read_bytes() == original  # untouched
    third = hosts.wrap(p, "cursor", TETHER, force=True)
    assert third.backup == folder / "m.json.bak.2"
    assert sorted(os.listdir(tmp_path)) == ["m.json", "state"]  # nothing beside the file


def test_no_second_backup_when_the_newest_one_already_holds_these_bytes(tmp_path: Path) -> None:
    """A write that fails after the backup, then a retry, does not pile up copies."""
    p = write(tmp_path / "m.json", '{"mcpServers": {"a": {"command": "x"}}}')
    original = p.read_bytes()
    folder = atomic.backup_dir(p.resolve())
    folder.mkdir(parents=True)
    (folder / "m.json.bak").write_bytes(original)
    res = hosts.wrap(p, "cursor", TETHER, force=True)
    assert res.written and res.backup is None
    assert sorted(os.listdir(folder)) == ["m.json.bak"]


def test_file_mode_is_kept_and_the_backup_is_no_more_readable(tmp_path: Path) -> None:
    """A 0600 config (it holds API keys) stays 0600, and so is its backup."""
    p = write(tmp_path / "m.json", '{"mcpServers": {"a": {"command": "x"}}}')
    p.chmod(0o600)
    res = hosts.wrap(p, "cursor", TETHER, force=True)
    assert stat.S_IMODE(p.stat().st_mode) == 0o600
    assert res.backup is not None and stat.S_IMODE(res.backup.stat().st_mode) == 0o600
    assert stat.S_IMODE(res.backup.parent.stat().st_mode) == 0o700


def test_a_symlinked_config_is_edited_at_its_target(tmp_path: Path) -> None:
    """Dotfile managers symlink configs: the link stays a link, the target changes."""
    target = write(tmp_path / "dotfiles/mcp.json", '{"mcpServers": {"a": {"command": "x"}}}')
    link = tmp_path / "mcp.json"
    link.symlink_to(target)
    hosts.wrap(link, "cursor", TETHER, force=True)
    assert link.is_symlink()
    assert values(target)["mcpServers"]["a"]["command"] == TETHER


def test_a_failed_replace_leaves_the_old_file_whole_and_no_temp_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated crash at os.replace: ConfigError, original bytes, only the backup added."""
    p = write(tmp_path / "m.json", '{"mcpServers": {"a": {"command": "x"}}}')
    before = p.read_bytes()

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", boom)
    with pytest.raises(ConfigError, match="cannot write: No space left on device"):
        hosts.wrap(p, "cursor", TETHER, force=True)
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.json", "state"]
    assert sorted(os.listdir(atomic.backup_dir(p.resolve()))) == ["m.json.bak"]


def test_a_config_rewritten_by_its_host_meanwhile_is_not_clobbered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the file changes between our read and our replace, we refuse and keep theirs."""
    p = write(tmp_path / "m.json", '{"mcpServers": {"a": {"command": "x"}}}')
    theirs = b'{"mcpServers": {}, "numStartups": 4}'

    def host_writes_meanwhile() -> None:
        p.write_bytes(theirs)

    monkeypatch.setattr(atomic, "_before_replace", host_writes_meanwhile)
    with pytest.raises(ConfigError, match="changed while being edited"):
        hosts.wrap(p, "cursor", TETHER, force=True)
    assert p.read_bytes() == theirs
    assert sorted(os.listdir(tmp_path)) == ["m.json", "state"]


def test_a_malformed_config_is_reported_with_line_and_column_and_left_untouched(
    tmp_path: Path,
) -> None:
    """ConfigError says file:line:col; no byte and no backup is written."""
    p = write(tmp_path / "m.json", '{\n  "mcpServers": {\n    "a": {"command": "x"}\n    "b": {}\n')
    before = p.read_bytes()
    with pytest.raises(ConfigError) as info:
        hosts.wrap(p, "cursor", TETHER, force=True)
    assert str(info.value).startswith(f"{p}:4:5: expected ','")
    assert p.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.json"]


# --- the CLI -------------------------------------------------------------------------


def test_wrap_without_host_or_config_is_a_usage_error(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Never rewrite every host silently: exit 2 and say what to pass."""
    write(fake_home / ".cursor/mcp.json", '{"mcpServers": {"a": {"command": "x"}}}')
    assert main(["wrap"]) == 2
    assert main(["unwrap", "--dry-run"]) == 2
    err = capfd.readouterr().err
    assert "--host NAME or --config FILE" in err
    assert values(fake_home / ".cursor/mcp.json")["mcpServers"]["a"]["command"] == "x"


def test_cli_wrap_dry_run_prints_the_diff_on_stdout_and_status_on_stderr(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """--dry-run: diff to stdout, a status line per file to stderr, file unchanged."""
    cfg = write(fake_home / ".cursor/mcp.json", '{"mcpServers": {"a": {"command": "x"}}}\n')
    before = cfg.read_bytes()
    assert main(["wrap", "--host", "cursor", "--dry-run", "--tether", TETHER, "--force"]) == 0
    out, err = capfd.readouterr()
    assert out.startswith(f"--- {cfg}\n") and TETHER in out
    assert "wrap (dry run) 1 server: a" in err
    assert cfg.read_bytes() == before


def test_cli_wrap_then_unwrap_round_trips_and_reports_the_backup(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """1. wrap --config; 2. hosts shows it wrapped; 3. unwrap; 4. original bytes."""
    cfg = write(Path.cwd() / "any.json", '{"mcpServers": {"a": {"command": "x", "args": ["1"]}}}')
    before = cfg.read_bytes()
    assert main(["wrap", "--config", str(cfg), "--tether", TETHER, "--force"]) == 0
    err = capfd.readouterr().err
    assert "wrapped 1 server: a" in err and "backup:" in err
    assert main(["hosts", "--config", str(cfg)]) == 0
    out = capfd.readouterr().out
    assert "wrapped" in out and f"{TETHER} run -- x 1" in out
    assert main(["unwrap", "--config", str(cfg)]) == 0
    assert cfg.read_bytes() == before


def test_cli_hosts_lists_discovered_files_as_json(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`hosts --json`: every found file with its stdio and remote servers, errors apart."""
    write(fake_home / ".cursor/mcp.json", CURSOR_WITH_REMOTE)
    write(Path.cwd() / ".vscode/mcp.json", '{"servers": {"v": {"type": "stdio", "command": "y"}}}')
    write(fake_home / ".codeium/windsurf/mcp_config.json", "{oops}")
    assert main(["hosts", "--json"]) == 2  # a malformed file is reported, others still listed
    doc = json.loads(capfd.readouterr().out)
    files = {(f["host"], f["scope"]): f for f in doc["results"]}
    assert set(files) == {("cursor", "user"), ("vscode", "project")}
    servers = {s["name"]: s["transport"] for s in files["cursor", "user"]["servers"]}
    assert servers == {"a": "stdio", "r": "remote"}
    assert doc["errors"][0]["line"] == 1 and doc["errors"][0]["column"] == 2


def test_cli_wrap_json_reports_changes_and_skips(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`wrap --json`: one document with changed and skipped entries per file."""
    write(fake_home / ".cursor/mcp.json", CURSOR_WITH_REMOTE)
    assert main(["wrap", "--host", "cursor", "--json", "--tether", TETHER, "--force"]) == 0
    doc = json.loads(capfd.readouterr().out)
    (res,) = doc["results"]
    assert res["changed"] == ["a"] and res["written"]
    assert res["skipped"] == [{"name": "r", "reason": "remote (url)"}]


def test_cli_wrap_of_a_host_with_no_config_is_a_usage_error(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Asking for a host that has no file here says so instead of succeeding silently."""
    assert main(["wrap", "--host", "windsurf", "--tether", TETHER, "--force"]) == 2
    assert "no config file found for windsurf" in capfd.readouterr().err


def test_help_teaches_with_examples(capfd: pytest.CaptureFixture[str]) -> None:
    """`wrap --help` shows examples and the exact transformation."""
    assert main(["wrap", "--help"]) == 0
    out = capfd.readouterr().out
    assert "mcp-tether wrap --host claude-desktop --dry-run" in out
    assert '"args": ["run", "--", C, *A]' in out


def apply_unified_diff(old: str, diff: str) -> str:
    """A minimal `patch`: apply the hunks of one-file unified diff text to `old`."""
    src = old.splitlines(keepends=True)
    out: list[str] = []
    cur = 0
    lines = diff.splitlines(keepends=True)[2:]
    for line in lines:
        if line.startswith("@@"):
            start = int(line.split()[1].split(",")[0][1:]) - 1
            out += src[cur:start]
            cur = start
        elif line.startswith(" ") or line.startswith("-"):
            assert src[cur].rstrip("\r\n") == line[1:].rstrip("\r\n"), (cur, line)
            if line.startswith(" "):
                out.append(src[cur])
            cur += 1
        else:
            out.append(line[1:])
    out += src[cur:]
    return "".join(out)


@pytest.mark.parametrize("case", sorted(REALISTIC))
def test_the_diff_turns_the_old_file_into_the_new_one(tmp_path: Path, case: str) -> None:
    """Applying the reported unified diff to the original gives the written file."""
    host, text, newline = REALISTIC[case]
    p = write(tmp_path / "cfg.json", text, newline)
    old = p.read_bytes().decode().lstrip("\ufeff")
    res = hosts.wrap(p, host, TETHER, force=True)
    new = p.read_bytes().decode().lstrip("\ufeff")
    if new.endswith("\n"):
        assert apply_unified_diff(old, res.diff) == new
    else:  # the diff adds a newline to a last line that has none
        assert apply_unified_diff(old, res.diff).rstrip("\n") == new.rstrip("\n")


def test_a_large_claude_json_is_wrapped_quickly(tmp_path: Path) -> None:
    """Thousands of projects (a real ~/.claude.json grows like this) stay fast: no difflib."""
    projects = {
        f"/w/p{i}": {
            "history": [{"display": "fix the tests " * 10} for _ in range(10)],
            "mcpServers": {"s": {"type": "stdio", "command": "npx", "args": ["-y", "pkg"]}},
        }
        for i in range(1500)
    }
    p = write(tmp_path / ".claude.json", json.dumps({"projects": projects}, indent=2))
    original = p.read_bytes()
    res = hosts.wrap(p, "claude-code", TETHER, force=True)
    assert len(res.changed) == 1500 and res.diff.count("\n@@ ") == 1500
    hosts.unwrap(p, "claude-code")
    assert p.read_bytes() == original


def test_hosts_with_nothing_found_lists_every_path_it_searched(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """An empty machine: exit 0, and stderr names the places looked at, per host."""
    assert main(["hosts"]) == 0
    err = capfd.readouterr().err
    assert "no host config files found; searched:" in err
    assert str(fake_home / ".cursor" / "mcp.json") in err
    assert str(fake_home / ".codex" / "config.toml") in err
    assert str(Path.cwd() / ".vscode" / "mcp.json") in err
    assert main(["hosts", "--host", "goose"]) == 0
    err = capfd.readouterr().err
    assert "goose" in err and "cursor" not in err
    assert main(["hosts", "--json"]) == 0
    doc = json.loads(capfd.readouterr().out)
    assert doc["results"] == [] and str(fake_home / ".cursor" / "mcp.json") in {
        p["path"] for p in doc["searched"]}


def test_hosts_says_which_servers_run_without_the_guard_and_how_to_wrap_them(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`not wrapped` (no jargon) per entry, then one stderr line with the wrap command;
    nothing to suggest once every stdio server is wrapped."""
    write(fake_home / ".cursor/mcp.json", CURSOR_WITH_REMOTE)
    assert main(["hosts"]) == 0
    out, err = capfd.readouterr()
    assert "not wrapped" in out
    assert "1 stdio server(s) not wrapped: `mcp-tether wrap --host cursor --dry-run`" in err
    assert main(["wrap", "--host", "cursor", "--tether", TETHER, "--force"]) == 0
    capfd.readouterr()
    assert main(["hosts"]) == 0
    out, err = capfd.readouterr()
    assert "not wrapped" not in out + err and "wrapped" in out


def test_a_config_given_without_host_is_read_with_its_hosts_shape(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`--config opencode.json` alone: OpenCode's `mcp` table and command arrays."""
    write(Path.cwd() / "opencode.json",
          '{"mcp": {"j": {"type": "local", "command": ["bun", "x", "jira-mcp"]}}}')
    assert main(["hosts", "--config", "opencode.json", "--json"]) == 0
    (f,) = json.loads(capfd.readouterr().out)["results"]
    assert f["host"] == "opencode" and f["servers"][0]["command"] == "bun"


def test_locations_moved_by_environment_variables_and_packaging(tmp_path: Path) -> None:
    """CLAUDE_CONFIG_DIR, COPILOT_HOME, CODEX_HOME; Claude Desktop's MSIX copy on Windows."""
    home = tmp_path / "h"
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cc"), "COPILOT_HOME": str(tmp_path / "co"),
           "CODEX_HOME": str(tmp_path / "cx")}
    got = places("linux", home, env)
    assert got["claude-code", "user"] == [tmp_path / "cc/.claude.json"]
    assert got["copilot-cli", "user"] == [tmp_path / "co/mcp-config.json"]
    assert got["codex", "user"] == [tmp_path / "cx/config.toml"]
    local = tmp_path / "Local"
    pkg = local / "Packages/Claude_pzs8sxrjxfjjc"
    pkg.mkdir(parents=True)
    win = places("win32", home, {"APPDATA": str(tmp_path / "Roaming"), "LOCALAPPDATA": str(local)})
    assert win["claude-desktop", "user"] == [
        pkg / "LocalCache/Roaming/Claude/claude_desktop_config.json",
        tmp_path / "Roaming/Claude/claude_desktop_config.json",
    ]


def test_an_editor_settings_file_without_servers_is_not_listed(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """Every VS Code user has a settings.json: listed only when it holds MCP servers,
    and a broken one (VS Code's own business) is not an error of ours."""
    settings = write(fake_home / ".config/Code/User/settings.json", '{"editor.fontSize": 14}')
    write(Path.cwd() / ".vscode/settings.json", "{broken")
    assert main(["hosts", "--json"]) == 0
    assert json.loads(capfd.readouterr().out)["results"] == []
    write(settings, '{"mcp": {"servers": {"g": {"command": "uvx", "args": ["mcp-server-git"]}}}}')
    assert main(["hosts", "--json"]) == 0
    (f,) = json.loads(capfd.readouterr().out)["results"]
    assert f["host"] == "vscode" and f["servers"][0]["name"] == "g"


def test_hosts_keeps_the_commands_in_one_column_whatever_the_state(
    fake_home: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`not wrapped, disabled` is the longest state: the commands still line up."""
    cfg = write(Path.cwd() / "d.json", '{"mcpServers": {'
                '"off": {"command": "srv-off", "disabled": true},'
                '"on": {"command": "srv-on"}}}')
    assert main(["hosts", "--config", str(cfg)]) == 0
    rows = [ln for ln in capfd.readouterr().out.splitlines() if "srv-" in ln]
    assert "not wrapped, disabled" in rows[0]
    assert len({ln.index("srv-") for ln in rows}) == 1, rows
