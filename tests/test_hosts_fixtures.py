"""Every host, with realistic files on a fake machine: found, wrapped validly, unwrapped exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import tomllib
import yaml

from mcp_tether import hosts
from mcp_tether.hosts import jsonc

FIXTURES = Path(__file__).parent / "fixtures" / "hosts"
TETHER = "/opt/tether/bin/mcp-tether"

# (host, path relative to the fake machine) of every fixture file discovery must find.
EXPECTED = {
    ("claude-desktop", "home/.config/Claude/claude_desktop_config.json"),
    ("claude-code", "home/.claude.json"),
    ("claude-code", "project/.mcp.json"),
    ("cursor", "home/.cursor/mcp.json"),
    ("cursor", "project/.cursor/mcp.json"),
    ("vscode", "home/.config/Code/User/mcp.json"),
    ("vscode", "home/.config/Code/User/settings.json"),
    ("vscode", "home/.config/Code/User/profiles/-5e3c1a2b/mcp.json"),
    ("vscode", "home/.config/VSCodium/User/mcp.json"),
    ("vscode", "project/.vscode/mcp.json"),
    ("vscode", "project/app.code-workspace"),
    ("windsurf", "home/.codeium/windsurf/mcp_config.json"),
    ("windsurf", "home/.codeium/windsurf-next/mcp_config.json"),
    ("zed", "home/.config/zed/settings.json"),
    ("zed", "home/.var/app/dev.zed.Zed/config/zed/settings.json"),
    ("zed", "project/.zed/settings.json"),
    ("copilot-cli", "home/.copilot/mcp-config.json"),
    ("gemini-cli", "home/.gemini/settings.json"),
    ("gemini-cli", "project/.gemini/settings.json"),
    ("cline", "home/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/"
              "cline_mcp_settings.json"),
    ("kiro", "home/.kiro/settings/mcp.json"),
    ("kiro", "project/.kiro/settings/mcp.json"),
    ("codex", "home/.codex/config.toml"),
    ("opencode", "home/.config/opencode/opencode.json"),
    ("opencode", "project/opencode.jsonc"),
    ("goose", "home/.config/goose/config.yaml"),
}


@pytest.fixture
def machine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the fixture machine under tmp_path; backups in a state folder there."""
    shutil.copytree(FIXTURES / "home", tmp_path / "home")
    shutil.copytree(FIXTURES / "project", tmp_path / "project")
    monkeypatch.setenv("MCP_TETHER_STATE_DIR", str(tmp_path / "state"))
    return tmp_path


def found(root: Path, host: str | None = None) -> list[hosts.ConfigFile]:
    return hosts.discover(host, home=root / "home", cwd=root / "project", env={},
                          platform="linux", root=root / "system")


def strict_values(path: Path) -> object:
    """The file as the host's own parser sees it (JSON.parse for strict JSON files)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".toml":
        return tomllib.loads(text)
    if path.suffix == ".yaml":
        return yaml.safe_load(text)
    try:
        return json.loads(text)
    except ValueError:
        return jsonc.loads(text)  # a JSONC host (Zed, VS Code, OpenCode .jsonc)


def test_every_host_file_of_the_fake_machine_is_found(machine: Path) -> None:
    """Discovery finds each fixture under the right host, and nothing else."""
    got = {(cf.host, str(cf.path.relative_to(machine))) for cf in found(machine)}
    assert got == EXPECTED
    assert {h for h, _ in got} == set(hosts.HOSTS)


def test_asking_for_one_host_finds_shared_files_too(machine: Path) -> None:
    """`.mcp.json` is read by Claude Code, VS Code and Copilot CLI: each host lists it."""
    for host in ("claude-code", "vscode", "copilot-cli"):
        paths = [cf.path for cf in found(machine, host)]
        assert machine / "project/.mcp.json" in paths


@pytest.mark.parametrize("host,rel", sorted(EXPECTED))
def test_each_file_is_wrapped_validly_and_unwrapped_byte_for_byte(
    machine: Path, host: str, rel: str
) -> None:
    """1. wrap (forced: the fixture commands are not installed here); 2. the host's own
    parser reads it, each stdio entry runs the old argv behind the guard, the rest is
    unchanged; 3. unwrap gives back the original bytes."""
    path = machine / rel
    original = path.read_bytes()
    before = {e.key_path: e for e in hosts.read_servers(path, host)}
    res = hosts.wrap(path, host, TETHER, force=True, project=True)
    strict_values(path)
    after = {e.key_path: e for e in hosts.read_servers(path, host)}
    assert after.keys() == before.keys()
    stdio = {k for k, e in before.items() if e.transport == "stdio" and not e.wrapped}
    assert sorted(res.changed) == sorted(before[k].label for k in stdio)
    for key, old in before.items():
        new = after[key]
        if key not in stdio:
            assert new == old
            continue
        assert new.wrapped and new.guarded_argv == [old.command, *old.args]
        assert (new.env, new.cwd, new.disabled) == (old.env, old.cwd, old.disabled)
    if stdio:
        assert res.written and path.read_bytes() != original
    back = hosts.unwrap(path, host, project=True)
    assert sorted(back.changed) == sorted(res.changed)
    assert path.read_bytes() == original


def test_codex_toml_wrap_keeps_comments_and_quoting(machine: Path) -> None:
    """The TOML edit touches only command and args: comments and 'literal' quotes stay."""
    path = machine / "home/.codex/config.toml"
    hosts.wrap(path, "codex", TETHER, force=True)
    text = path.read_text()
    assert "# Codex CLI configuration (docs/config.md)" in text
    assert f'command = "{TETHER}"   # a local binary' in text
    assert "'uvx'" in text
    cfg = tomllib.loads(text)["mcp_servers"]
    assert cfg["bare"]["args"] == ["run", "--", "/usr/local/bin/my-mcp"]
    assert cfg["figma"] == {"url": "https://mcp.figma.com/mcp",
                            "bearer_token_env_var": "FIGMA_OAUTH_TOKEN"}


def test_goose_yaml_wrap_edits_block_and_flow_lists_in_place(machine: Path) -> None:
    """YAML: a block list gains three lines, a flow list three items, a missing args a line."""
    path = machine / "home/.config/goose/config.yaml"
    hosts.wrap(path, "goose", TETHER, force=True)
    ext = yaml.safe_load(path.read_text())["extensions"]
    assert ext["github"]["cmd"] == TETHER
    github = ["run", "--", "npx", "-y", "@modelcontextprotocol/server-github"]
    assert ext["github"]["args"] == github
    assert ext["time"]["args"] == ["run", "--", "uvx", "mcp-server-time", "--local-timezone=UTC"]
    assert ext["bare"]["args"] == ["run", "--", "/usr/local/bin/my-mcp"]
    assert ext["developer"] == {"bundled": True, "display_name": "Developer", "enabled": True,
                                "name": "developer", "timeout": 300, "type": "builtin"}


def test_opencode_command_arrays_get_the_guard_at_their_front(machine: Path) -> None:
    """OpenCode's `command` is one array: the guard goes in as its first three words
    (named portably, `mcp-tether`, in a project file)."""
    path = machine / "project/opencode.jsonc"
    hosts.wrap(path, "opencode", TETHER, force=True, scope="project")
    jira = jsonc.loads(path.read_text())["mcp"]["jira"]
    assert jira["command"] == ["mcp-tether", "run", "--", "bun", "x", "jira-mcp"]


def test_copilot_local_type_is_stdio_not_remote(machine: Path) -> None:
    """Copilot CLI's `type: "local"` is a stdio server; `type: "http"` is remote."""
    got = {e.name: e.transport
           for e in hosts.read_servers(machine / "home/.copilot/mcp-config.json", "copilot-cli")}
    assert got == {"playwright": "stdio", "context7": "remote"}
