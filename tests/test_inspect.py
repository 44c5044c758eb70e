"""`mcp-tether inspect` reads the installed SDKs' stdio server transports correctly."""

from __future__ import annotations

import importlib.metadata
import json
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import main
from mcp_tether.inspect import inspect_path, sdks_for_command
from mcp_tether.lab import node_env

needs_node = pytest.mark.skipif(
    node_env.missing_tools() is not None, reason="node and npm are needed for the Node SDK"
)


@pytest.fixture(scope="module")
def node_dir() -> Path:
    return node_env.ensure(quiet=True)


def _pinned_sdk_version() -> str:
    lock = json.loads((node_env.SRC / "package-lock.json").read_text())
    return str(lock["packages"]["node_modules/@modelcontextprotocol/sdk"]["version"])


@needs_node
def test_the_lab_node_sdk_registers_no_eof_listener_on_stdin(node_dir: Path) -> None:
    """1.30.0's StdioServerTransport listens for data and error only: EOF ends nothing."""
    (sdk,) = [s for s in inspect_path(node_dir / "node_modules")
              if s.package == "@modelcontextprotocol/sdk"]
    assert sdk.version == _pinned_sdk_version()
    assert sorted(sdk.stdin_events) == ["data", "error"]
    assert sdk.exits_on_eof is False
    assert sdk.transport_file.endswith("server/stdio.js")
    assert sdk.signals == [] and sdk.parent_watch is False


def test_the_installed_python_sdk_ends_its_session_on_eof() -> None:
    """The venv's `mcp` reads stdin in a loop that ends at EOF."""
    found = [s for s in inspect_path(None) if s.package == "mcp"]
    assert found, "mcp is a dependency: it must be found in this interpreter"
    sdk = found[0]
    assert sdk.version == importlib.metadata.version("mcp")
    assert sdk.exits_on_eof is True
    assert "eof" in sdk.stdin_events
    assert sdk.transport_file.endswith("stdio.py")


def _fake_node_sdk(root: Path, version: str, listeners: str) -> Path:
    pkg = root / "node_modules" / "@modelcontextprotocol" / "sdk"
    (pkg / "dist" / "esm" / "server").mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({
        "name": "@modelcontextprotocol/sdk", "version": version,
        "exports": {"./*": {"import": "./dist/esm/*", "require": "./dist/cjs/*"}},
    }))
    (pkg / "dist" / "esm" / "server" / "stdio.js").write_text(
        "export class StdioServerTransport {\n"
        "  constructor(s = process.stdin) { this._stdin = s; this.x = '}'; }\n"
        f"  async start() {{ this._stdin.on('data', this._ondata); {listeners} }}\n"
        "}\n"
        "function elsewhere() { process.stdin.on('end', () => {}); }\n"
    )
    return pkg


def test_a_transport_that_listens_for_end_and_close_is_reported_to_exit_on_eof(
    tmp_path: Path,
) -> None:
    """Listeners are read from the source, not known per version; outside the class
    they do not count."""
    _fake_node_sdk(tmp_path, "9.9.9", "this._stdin.once(\"end\", f); this._stdin.on(`close`, f);")
    (sdk,) = inspect_path(tmp_path)
    assert sdk.version == "9.9.9"
    assert sdk.stdin_events == ["data", "end", "close"]
    assert sdk.exits_on_eof is True


def test_a_listener_outside_the_transport_class_does_not_count(tmp_path: Path) -> None:
    _fake_node_sdk(tmp_path, "9.9.8", "")
    (sdk,) = inspect_path(tmp_path)
    assert sdk.stdin_events == ["data"]
    assert sdk.exits_on_eof is False


@needs_node
def test_a_node_script_command_locates_its_nearest_sdk(node_dir: Path) -> None:
    sdks = sdks_for_command(["node", str(node_dir / "timer.mjs")])
    assert [s.package for s in sdks] == ["@modelcontextprotocol/sdk"]


def test_a_python_module_that_cannot_be_found_is_unknown_not_the_installed_sdk() -> None:
    """`mcp` installed beside a module that cannot be found says nothing about what the
    server loads."""
    (sdk,) = sdks_for_command([sys.executable, "-m", "some_server"])
    assert sdk.state == "unknown" and sdk.package is None
    assert "some_server not found" in sdk.how


@needs_node
def test_a_sh_c_wrapper_is_seen_through(node_dir: Path) -> None:
    sdks = sdks_for_command(["sh", "-c", f"node {node_dir / 'timer.mjs'}; true"])
    assert [s.package for s in sdks] == ["@modelcontextprotocol/sdk"]


def test_inspect_json_has_the_documented_fields(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    for sdk in out["results"]:
        assert {"package", "version", "path", "stdin_events", "exits_on_eof"} <= set(sdk)


def test_inspect_of_a_missing_path_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["inspect", str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_inspect_finding_nothing_exits_1(tmp_path: Path) -> None:
    assert main(["inspect", str(tmp_path)]) == 1


@pytest.mark.parametrize(("text", "said"), [("[1, 2]", "not a JSON object (an array)"),
                                           ("null", "not a JSON object (null)"),
                                           ("{not json", ":1:2: not JSON")])
def test_a_package_json_that_is_not_an_object_is_one_line_not_a_trace(
    tmp_path: Path, text: str, said: str, capsys: pytest.CaptureFixture[str],
) -> None:
    """The folder asked about: a config error (2) naming the file. Met while scanning a
    node_modules, the same file is no package (tested through inspect_path)."""
    (tmp_path / "package.json").write_text(text)
    (tmp_path / "index.js").write_text("console.log(1)\n")
    assert main(["inspect", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and str(tmp_path / "package.json") in err and len(err.splitlines()) == 1
    nested = tmp_path / "app" / "node_modules" / "odd"
    nested.mkdir(parents=True)
    (nested / "package.json").write_text(text)
    assert inspect_path(tmp_path / "app") == []



def _fake_site(site: Path) -> None:
    """A site-packages with `mcp` (a transport reading stdin in a loop) and a
    `fastmcp-slim` whose server imports it, plus the `fastmcp` metapackage."""
    (site / "mcp" / "server").mkdir(parents=True)
    (site / "mcp" / "__init__.py").write_text("")
    (site / "mcp" / "server" / "stdio.py").write_text(
        "import signal\n"
        "async def stdio_server(stdin=None):\n"
        "    async for line in stdin:\n"
        "        yield line\n"
    )
    for dist, version, tops, requires in (
        ("mcp", "7.0.0", "mcp", None),
        ("fastmcp_slim", "4.0.0", "fastmcp", None),
        ("fastmcp", "4.0.0", None, "fastmcp-slim[server]==4.0.0"),
    ):
        di = site / f"{dist}-{version}.dist-info"
        di.mkdir()
        meta = f"Name: {dist.replace('_', '-')}\nVersion: {version}\n"
        if requires:
            meta += f"Requires-Dist: {requires}\n"
        (di / "METADATA").write_text(meta + "\n")
        (di / "RECORD").write_text(
            (f"{tops}/__init__.py,,\n" if tops else "") + f"{di.name}/METADATA,,\n"
        )
    (site / "fastmcp" / "server").mkdir(parents=True)
    (site / "fastmcp" / "__init__.py").write_text("")
    (site / "fastmcp" / "server" / "transport.py").write_text(
        "from mcp.server.stdio import stdio_server\n"
    )


def test_python_fastmcp_is_reported_as_using_the_mcp_transport(tmp_path: Path) -> None:
    """The transport is found by parsing, and a re-user is followed to the definer."""
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    _fake_site(site)
    found = {s.package: s for s in inspect_path(tmp_path)}
    assert found["mcp"].exits_on_eof is True and found["mcp"].version == "7.0.0"
    assert found["mcp"].signals == []  # importing signal is not handling one
    slim = found["fastmcp-slim"]
    assert slim.delegates_to == "mcp@7.0.0" and slim.exits_on_eof is True
    assert found["fastmcp"].delegates_to == "fastmcp-slim"
    assert found["fastmcp"].exits_on_eof is None


def test_a_uvx_command_locates_the_environment_uv_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = tmp_path / "archive-v0" / "abc" / "lib" / "python3.11" / "site-packages"
    _fake_site(site)
    di = site / "mcp_server_time-1.0.dist-info"
    di.mkdir()
    (di / "entry_points.txt").write_text(
        "[console_scripts]\nmcp-server-time = mcp_server_time:main\n")
    (site / "mcp_server_time").mkdir()
    (site / "mcp_server_time" / "__init__.py").write_text("from .server import main\n")
    (site / "mcp_server_time" / "server.py").write_text(
        "from mcp.server.stdio import stdio_server\ndef main(): ...\n")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path))
    (sdk,) = sdks_for_command(["uvx", "mcp-server-time"])
    # What its console script's module imports (through its own submodule), not every
    # SDK in the environment.
    assert (sdk.state, sdk.package, sdk.version) == ("sdk", "mcp", "7.0.0")
    assert sdk.exits_on_eof is True and "uvx environment" in sdk.how


def test_a_bundled_transport_class_expression_is_found_through_the_exports_map(
    tmp_path: Path,
) -> None:
    """Bundlers write `var StdioServerTransport = class {`; exports name `./stdio`."""
    pkg = tmp_path / "node_modules" / "@modelcontextprotocol" / "server"
    (pkg / "dist").mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({
        "name": "@modelcontextprotocol/server", "version": "2.0.0",
        "exports": {"./stdio": {"import": {"types": "./dist/stdio.d.mts",
                                           "default": "./dist/stdio.mjs"}}},
    }))
    (pkg / "dist" / "stdio.mjs").write_text(
        "var StdioServerTransport = class {\n"
        "  start() { this._stdin.on(\"data\", a); this._stdin.on(\"end\", b); }\n"
        "};\nexport { StdioServerTransport };\n"
    )
    (sdk,) = inspect_path(tmp_path)
    assert sdk.transport_file.endswith("dist/stdio.mjs")
    assert sdk.stdin_events == ["data", "end"] and sdk.exits_on_eof is True
