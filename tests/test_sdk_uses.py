"""The SDK a server loads, one answer shared by `inspect`, `probe` and `ps`.

Fixture packages under tests/fixtures/sdk (tiny npm packages with fake node_modules
trees; no network): a server depending on both SDK lines that loads 2.x, a server whose
library bundles the SDK, a stdlib server run by an interpreter with `mcp` installed,
and a fastmcp server (in the side venv at $MCP_TETHER_FASTMCP_PYTHON).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.inspect import inspect_path, sdks_for_command
from mcp_tether.inspect.uses import uses_for_command
from mcp_tether.probe.diagnose import annotate
from mcp_tether.proc import wait_gone
from mcp_tether.scan.identify import Identifier
from scan_lab import DEADLINE, Lab, entry, ps_json, run_cli

FIX = Path(__file__).parent / "fixtures" / "sdk"
BOTH = FIX / "node-both-lines"
BUNDLED = FIX / "node-bundled"
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
FASTMCP = os.environ.get("MCP_TETHER_FASTMCP_PYTHON")
MCP1 = os.environ.get("MCP_TETHER_MCP1_PYTHON")


def _three_answers(argv: list[str], cwd: Path) -> tuple[Any, Any, str]:
    """(inspect's --command answer, ps's What, probe's diagnosis) for one server."""
    uses = uses_for_command(argv, str(cwd))
    what = Identifier().identify(argv, str(cwd), "")
    failed = {"scenario": "exit", "verdict": "orphaned", "passed": False, "events": [],
              "survivors": []}
    old = os.getcwd()
    os.chdir(cwd)
    try:
        annotate([failed], argv)
    finally:
        os.chdir(old)
    return uses, what, str(failed["diagnosis"])


def test_a_server_depending_on_both_sdk_lines_is_named_by_the_2x_one_it_loads() -> None:
    """1. The package depends on @modelcontextprotocol/sdk 1.32.2 (through a helper) and
    @modelcontextprotocol/server 2.4.0; its script imports the 2.x one through a module
    of its own. 2. inspect, ps and the probe's diagnosis all name server 2.4.0, and the
    diagnosis reads 2.x's transport (it listens for 'end'), not 1.x's."""
    argv = ["node", "lib/index.mjs"]
    uses, what, diagnosis = _three_answers(argv, BOTH)
    assert (uses.state, uses.package, uses.version) == ("sdk", "@modelcontextprotocol/server",
                                                         "2.4.0")
    assert "lib/serve.mjs imports '@modelcontextprotocol/server/stdio'" in uses.how
    assert (what.sdk, what.sdk_version) == ("@modelcontextprotocol/server", "2.4.0")
    assert "loads @modelcontextprotocol/server 2.4.0, whose stdio transport ends its " \
           "session on EOF" in diagnosis
    assert "1.32.2" not in diagnosis
    # `inspect PACKAGE`: what the entry point loads comes first; the other is marked.
    first, *others = inspect_path(BOTH)
    assert (first.package, first.version) == ("@modelcontextprotocol/server", "2.4.0")
    assert [o.package for o in others] == ["@modelcontextprotocol/sdk"]
    assert "not what the entry point loads" in others[0].notes[-1]


def test_an_sdk_bundled_into_a_library_of_the_server_is_found_by_its_transport() -> None:
    """cli.js -> lib/program.js -> fx-bundle-core/lib/mcp -> mcpBundleImpl.js, whose
    `StdioServerTransport = class` came from @modelcontextprotocol/sdk (the bundler's
    path comment). No SDK package is installed anywhere in the tree."""
    argv = ["node", "cli.js"]
    uses, what, diagnosis = _three_answers(argv, BUNDLED)
    assert uses.state == "sdk" and uses.bundled
    assert (uses.package, uses.version, uses.via) == ("fx-bundle-core", "1.2.0",
                                                      "@modelcontextprotocol/sdk")
    assert uses.path is not None and uses.path.endswith("mcpBundleImpl.js")
    assert (what.sdk, what.sdk_version) == ("@modelcontextprotocol/sdk", None)
    assert "bundled into fx-bundle-core 1.2.0" in what.source[-1]
    assert "bundled into fx-bundle-core 1.2.0 via @modelcontextprotocol/sdk, whose stdio " \
           "transport does not react to EOF" in diagnosis
    [found] = inspect_path(BUNDLED)  # a bundled SDK is found, not "no MCP SDK found"
    assert found.transport_file.endswith("mcpBundleImpl.js")
    assert found.exits_on_eof is False


@pytest.mark.parametrize("python", [sys.executable, MCP1], ids=["mcp2", "mcp1"])
def test_a_stdlib_server_beside_an_installed_mcp_is_never_said_to_use_it(
    python: str | None,
) -> None:
    """The interpreter has `mcp` installed; the script imports only json and sys."""
    if python is None:
        pytest.skip("MCP_TETHER_MCP1_PYTHON is not set")
    argv = [python, str(FIX / "py-stdlib" / "server.py")]
    uses, what, diagnosis = _three_answers(argv, FIX)
    assert uses.state == "none" and uses.package is None
    assert "imports no MCP SDK" in uses.how
    assert what.sdk is None and not what.mcp
    assert "loads no MCP SDK" in diagnosis and "mcp 2" not in diagnosis
    assert sdks_for_command(argv)[0].state == "none"


def test_a_fastmcp_server_is_named_fastmcp_through_mcp() -> None:
    """fastmcp 4 is a metapackage over fastmcp-slim, which serves through `mcp`: the
    answer follows the chain to mcp's own transport (it ends at EOF)."""
    if not FASTMCP:
        pytest.skip("MCP_TETHER_FASTMCP_PYTHON is not set")
    argv = [FASTMCP, str(FIX / "py-fastmcp" / "server.py")]
    uses, what, diagnosis = _three_answers(argv, FIX)
    assert (uses.state, uses.package) == ("sdk", "fastmcp")
    assert uses.via is not None and uses.via.startswith("mcp ")
    assert uses.info is not None and uses.info.exits_on_eof is True
    assert (what.sdk, what.sdk_version) == ("fastmcp", uses.version)
    assert f"loads fastmcp {uses.version} via {uses.via}, whose stdio transport ends " \
           "its session on EOF" in diagnosis
    assert "cannot be read" not in diagnosis


# ----- ps and reap on a 2.x split-package server ----------------------------------------


@needs_node
@pytest.mark.linux
def test_a_2x_split_package_server_is_listed_live_and_reaped_when_leaked(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. `node .../lib/index.mjs` (no "mcp" in its command) serves a live client: ps
    lists it, found by its SDK, named @modelcontextprotocol/server 2.4.0. 2. Its client
    is SIGKILLed: it leaks (a live timer). 3. Plain `reap --yes` ends it."""
    pair = lab.pair(["node", str(BOTH / "lib" / "index.mjs")], socket=True)
    doc = ps_json(capsys)
    e = entry(doc, pair.server.pid)
    assert e is not None, [s["command"] for s in doc["results"]]
    assert e["state"] == "live" and "sdk" in e["found_by"] and e["mcp"] is True
    w = e["what"]
    assert (w["package"], w["sdk"], w["sdk_version"]) == (
        "fx-both-lines", "@modelcontextprotocol/server", "2.4.0")
    leaked = pair.orphan()
    e = entry(ps_json(capsys), leaked.pid)
    assert e is not None and e["state"] == "leaked"
    rc, out, err = run_cli(capsys, "reap", "--yes", "--json")
    assert rc == 0, (out, err)
    got = json.loads(out)
    assert [(r["pid"], r["outcome"]) for r in got["results"]] == [(leaked.pid, "ended")]
    assert wait_gone(leaked, DEADLINE) is not None


@pytest.mark.linux
def test_a_running_python_server_is_read_in_the_environment_it_has_mapped(
    tmp_path: Path,
) -> None:
    """1. `python server.py`, where `python` is the fastmcp venv's only in the server's
    own PATH; 2. from its command alone (our PATH) fastmcp is not installed: unknown;
    3. with its pid, the site-packages of the extension modules it has mapped
    (/proc/PID/maps) are its environment: fastmcp, through mcp."""
    if not FASTMCP:
        pytest.skip("MCP_TETHER_FASTMCP_PYTHON is not set")
    import subprocess

    from polling import until

    script = str(FIX / "py-fastmcp" / "server.py")
    env = {**os.environ, "PATH": f"{Path(FASTMCP).parent}:{os.environ['PATH']}",
           "FASTMCP_SHOW_SERVER_BANNER": "0"}
    p = subprocess.Popen(["python", script], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        site = str(Path(FASTMCP).parents[1])

        def mapped() -> bool:
            try:
                return site in Path(f"/proc/{p.pid}/maps").read_text()
            except OSError:
                return False

        until(mapped, "the server to load its extension modules", 60)
        blind = uses_for_command(["python", script], str(FIX))
        assert blind.state == "unknown" and blind.package == "fastmcp", blind
        seen = uses_for_command(["python", script], str(FIX), p.pid)
        assert (seen.state, seen.package) == ("sdk", "fastmcp"), seen
        assert f"/proc/{p.pid}/maps" in seen.how
        what = Identifier().identify(["python", script], str(FIX), "", p.pid)
        assert what.sdk == "fastmcp" and what.sdk_version == seen.version
    finally:
        assert p.stdin is not None
        p.stdin.close()  # EOF: the server ends
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _npm_tree(root: Path, packages: dict[str, dict[str, Any]], entries: dict[str, str]) -> None:
    """A prefix like the survey's package cache: root/node_modules/NAME with package.json
    and one entry file each."""
    for name, meta in packages.items():
        d = root / "node_modules" / name
        d.mkdir(parents=True)
        (d / "package.json").write_text(json.dumps({"name": name, "version": "1.0.0",
                                                    **meta}))
        (d / "index.js").write_text(entries.get(name, ""))


def test_an_npx_command_run_in_a_project_that_depends_on_the_server_is_read_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """1. `npx -y pkg@1.0.0` in a folder whose node_modules has pkg (what `survey` runs),
    with an empty npx cache: the SDK is found from the project, as npx runs it; 2. the
    probe's diagnosis names that SDK, never "not in the npx cache"."""
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "empty-npm-cache"))
    _npm_tree(tmp_path, {
        "@acme/gitlab-mcp": {"bin": {"gitlab-mcp": "index.js"}},
        "@modelcontextprotocol/sdk": {"version": "1.32.2"},
    }, {"@acme/gitlab-mcp": "import { StdioServerTransport } from "
                            "'@modelcontextprotocol/sdk/server/stdio.js';\n"})
    sdk = tmp_path / "node_modules" / "@modelcontextprotocol" / "sdk"
    (sdk / "package.json").write_text(json.dumps({
        "name": "@modelcontextprotocol/sdk", "version": "1.32.2",
        "exports": {"./*": "./*"}}))
    (sdk / "server").mkdir()
    (sdk / "server" / "stdio.js").write_text("export class StdioServerTransport {}\n")
    uses, _, diagnosis = _three_answers(["npx", "-y", "@acme/gitlab-mcp@1.0.0"], tmp_path)
    assert (uses.state, uses.package, uses.version) == \
        ("sdk", "@modelcontextprotocol/sdk", "1.32.2"), uses.how
    assert "project's node_modules" in uses.how
    assert "not in the npx cache" not in diagnosis and "@modelcontextprotocol/sdk" in diagnosis


def test_an_sdk_inspect_does_not_know_is_named_and_its_eof_behaviour_said_unknown(
        tmp_path: Path) -> None:
    """1. A server that imports `@acme/mcp-server-sdk` (an SDK of its own): `inspect` of
    the package names it, state unknown, exits_on_eof null; 2. the probe's diagnosis says
    which SDK and that its EOF behaviour is unknown; 3. a plain helper with MCP in its
    name and no SDK about it is no SDK."""
    _npm_tree(tmp_path, {
        "pdf-mcp": {"bin": {"pdf-mcp": "index.js"}},
        "@acme/mcp-server-sdk": {"version": "2.1.1",
                                 "description": "Pure functional MCP server SDK"},
        "mcp-colors": {"description": "colours for logs"},
    }, {"pdf-mcp": "import {serve} from '@acme/mcp-server-sdk';\nimport 'mcp-colors';\n"})
    server = tmp_path / "node_modules" / "pdf-mcp"
    [found] = inspect_path(server)
    assert (found.state, found.package, found.version, found.exits_on_eof) == \
        ("unknown", "@acme/mcp-server-sdk", "2.1.1", None)
    assert "not known to inspect" in (found.label or "")
    uses, _, diagnosis = _three_answers(["npx", "-y", "pdf-mcp@1.0.0"], tmp_path)
    assert uses.package == "@acme/mcp-server-sdk"
    assert "It loads @acme/mcp-server-sdk 2.1.1, an MCP SDK mcp-tether does not know: " \
        "what its transport does at EOF is unknown" in diagnosis
    (tmp_path / "node_modules" / "pdf-mcp" / "index.js").write_text("import 'mcp-colors';\n")
    assert uses_for_command(["npx", "-y", "pdf-mcp@1.0.0"], str(tmp_path)).package is None
