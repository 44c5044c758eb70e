"""Servers by package name: specs, the private cache, bin discovery, the launch forms.

Every package here is a local fixture built by the test (an npm folder, a wheel made with
zipfile); npm runs offline and pip without an index, so the suite needs no network.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import main
from mcp_tether.errors import UsageError
from mcp_tether.packages import PackageError, ensure_installed, parse_spec, prepare
from mcp_tether.packages.spec import PackageSpec, is_package_spec
from package_fixtures import NODE, go_offline, npm_folder, wheel

needs_node = pytest.mark.skipif(not NODE, reason="node, npm and npx are needed")


@pytest.fixture(autouse=True)
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return go_offline(tmp_path, monkeypatch)


def test_specs_name_the_ecosystem_the_package_and_an_exact_version(tmp_path: Path) -> None:
    """Scoped npm names, `==` and `@` pins, `latest` and local paths all parse."""
    assert parse_spec("npm:@modelcontextprotocol/server-memory@2026.8.31") == PackageSpec(
        "npm", "@modelcontextprotocol/server-memory", "2026.8.31")
    assert parse_spec("npm:@scope/x") == PackageSpec("npm", "@scope/x", None)
    assert parse_spec("npm:x@latest").version is None
    assert parse_spec("pypi:mcp-server-time==2026.10.19").version == "2026.10.19"
    assert parse_spec("pypi:mcp-server-time@1.0").text == "pypi:mcp-server-time==1.0"
    assert parse_spec("pypi:mcp[cli]==1.2").requirement == "mcp[cli]==1.2"
    local = parse_spec(f"npm:{tmp_path}")
    assert local.path == str(tmp_path) and local.requirement == str(tmp_path)
    assert is_package_spec("npm:x") and not is_package_spec("npm") and \
        not is_package_spec("node")
    assert is_package_spec("npm:")  # an empty spec is refused by parse_spec, not run


@pytest.mark.parametrize("bad", ["npm:", "npm:Bad Name", "pypi:x>=1", "npm:x@^1.2",
                                 "pypi:-x", "cargo:x", "npm:./no/such/dir"])
def test_a_malformed_spec_is_one_usage_error(bad: str) -> None:
    """Ranges, bad names, unknown ecosystems and missing paths: exit 2, never a trace."""
    with pytest.raises(UsageError):
        parse_spec(bad)


@pytest.mark.parametrize(("bad", "why"), [
    ("npm:foo@", "names no version"), ("npm:@scope/foo@", "names no version"),
    ("pypi:foo==", "names no version"), ("pypi:--index-url=x", "is not a package name")])
def test_a_cut_off_version_or_an_option_for_a_name_says_so(bad: str, why: str) -> None:
    """`foo@` is not taken for the newest, `--index-url=x` is not blamed on a range."""
    with pytest.raises(UsageError, match=why):
        parse_spec(bad)


@needs_node
def test_an_npm_package_installs_once_and_its_bin_is_the_server_command(
        tmp_path: Path, offline: Path) -> None:
    """1. The first prepare installs into the cache; 2. the second reuses it untouched;
    3. npx runs in the cache prefix with the pinned name, direct runs the bin itself."""
    d = npm_folder(tmp_path, "fixture-eof-server", {"fixture-eof-server": "server.js"})
    first = prepare(f"npm:{d}", launch="direct", args=["--x"])
    assert first.installed and first.version == "1.0.0" and first.language == "node"
    assert first.bins == {"fixture-eof-server":
                          "node_modules/fixture-eof-server/server.js"}
    assert first.argv == [str(first.dir / first.bins["fixture-eof-server"]), "--x"]
    assert Path(first.argv[0]).is_file() and first.dir.is_relative_to(offline)
    marker = first.dir / ".mcp-tether-package.json"
    stamp = marker.stat().st_mtime_ns
    again = prepare(f"npm:{d}", launch="npx")
    assert not again.installed and again.dir == first.dir and marker.stat().st_mtime_ns == stamp
    assert again.argv == ["npx", "-y", "fixture-eof-server@1.0.0"]
    assert again.cwd == str(first.dir)


@needs_node
def test_several_bins_need_bin_and_the_error_lists_the_choices(tmp_path: Path) -> None:
    """npx's rule picks the bin named like the package; otherwise --bin, or an error
    naming every choice."""
    d = npm_folder(tmp_path, "two-bins", {"alpha": "server.js", "beta": "other.js"})
    with pytest.raises(UsageError, match=r"2 commands: alpha, beta; choose one with --bin"):
        prepare(f"npm:{d}")
    got = prepare(f"npm:{d}", bin="beta", launch="npx")
    assert got.argv == ["npx", "-y", "--package", "two-bins@1.0.0", "beta"]
    with pytest.raises(UsageError, match="no command 'gamma'; its commands: alpha, beta"):
        prepare(f"npm:{d}", bin="gamma")
    named = npm_folder(tmp_path, "named", {"named": "server.js", "helper": "other.js"})
    assert prepare(f"npm:{named}", launch="direct").bin == "named"
    single = npm_folder(tmp_path, "single", "server.js")  # "bin": "file" form
    assert prepare(f"npm:{single}", launch="direct").bins == {
        "single": "node_modules/single/server.js"}


def test_a_package_without_a_server_command_exits_126(tmp_path: Path) -> None:
    """A wheel with no console script (and, with npm, a package.json without bin)."""
    whl = wheel(tmp_path, "lib-only", [])
    with pytest.raises(PackageError, match="has no server command: no console_scripts") as exc:
        prepare(f"pypi:{whl}", launch="direct")
    assert exc.value.exit_code == 126
    if NODE:
        d = npm_folder(tmp_path, "no-bin", None)
        with pytest.raises(PackageError, match="no `bin` in its package.json") as exc:
            prepare(f"npm:{d}")
        assert exc.value.exit_code == 126


def test_a_wheel_installs_once_into_a_venv_and_its_console_script_runs(
        tmp_path: Path, offline: Path) -> None:
    """The console script of the distribution pip reports as requested is the command;
    the second prepare comes from the cache."""
    whl = wheel(tmp_path, "fixture-py-server", ["fixture-py-server", "fixture-helper"])
    got = prepare(f"pypi:{whl}", launch="direct")
    assert got.installed and got.name == "fixture-py-server" and got.version == "1.0.0"
    assert sorted(got.bins) == ["fixture-helper", "fixture-py-server"]
    assert got.bin == "fixture-py-server" and os.access(got.argv[0], os.X_OK)
    assert (got.dir / "pyvenv.cfg").is_file() and got.dir.is_relative_to(offline)
    assert not prepare(f"pypi:{whl}", launch="direct").installed
    if shutil.which("uvx"):
        assert prepare(f"pypi:{whl}", launch="uvx").argv[:3] == ["uvx", "--from", str(whl)]


def test_an_unknown_package_is_one_line_and_exit_127(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Not in the (unreachable) index and not cached: one line naming pip's reason."""
    assert main(["probe", "pypi:no-such-server-zz==1.0"]) == 127
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "pypi:no-such-server-zz==1.0: cannot be fetched" in err
    assert "No matching distribution" in err
    if NODE:
        assert main(["probe", "npm:no-such-server-zz"]) == 127
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and "npm:no-such-server-zz: cannot be fetched" in err
        assert "no version is cached" in err


@needs_node
def test_offline_an_unversioned_spec_uses_the_newest_cached_version(
        tmp_path: Path, offline: Path) -> None:
    """npm cannot be asked for the newest version (offline): the cached one is used."""
    d = npm_folder(tmp_path, "fixture-eof-server", {"fixture-eof-server": "server.js"})
    local = prepare(f"npm:{d}", launch="direct")
    shutil.copytree(local.dir, offline / "npm-ignore-scripts" / "fixture-eof-server@1.0.0")
    got = prepare("npm:fixture-eof-server", launch="direct")
    assert not got.installed and got.version == "1.0.0"
    assert got.dir == offline / "npm-ignore-scripts" / "fixture-eof-server@1.0.0"


def test_an_interrupted_install_is_not_used(tmp_path: Path, offline: Path) -> None:
    """A folder without the completion marker is installed again, not trusted."""
    whl = wheel(tmp_path, "fixture-py-server", ["fixture-py-server"])
    spec = parse_spec(f"pypi:{whl}")
    first, _, _ = ensure_installed(spec)
    (first / ".mcp-tether-package.json").unlink()
    again, marker, installed = ensure_installed(spec)
    assert installed and again == first and marker["version"] == "1.0.0"


@needs_node
def test_probe_runs_an_npm_package_through_npx_as_a_host_would(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`probe npm:DIR -s close --json`: npx -y NAME@VERSION, from the cache, exits at EOF;
    options after the spec are the probe's, words after `--` the server's."""
    d = npm_folder(tmp_path, "fixture-eof-server", {"fixture-eof-server": "server.js"})
    code = main(["probe", f"npm:{d}", "-s", "close", "--json", "--", "--flag"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["command"] == ["npx", "-y", "fixture-eof-server@1.0.0", "--flag"]
    assert out["results"][0]["verdict"] == "exited"


def test_probe_runs_a_pypi_package_directly(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`probe pypi:WHEEL --launch direct`: the venv's console script, judged like any server;
    --bin outside a package spec is refused."""
    whl = wheel(tmp_path, "fixture-py-server", ["fixture-py-server"])
    code = main(["probe", "--launch", "direct", "-s", "close", "--json", f"pypi:{whl}"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["command"][0].endswith("/bin/fixture-py-server")
    assert out["results"][0]["verdict"] == "exited"
    assert main(["probe", "--bin", "x", "--", sys.executable, "-c", "pass"]) == 2
    assert "--allow-build go with a package spec" in capsys.readouterr().err


def test_inspect_takes_a_package_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`inspect pypi:WHEEL` installs it and looks in its venv (no SDK in this fixture)."""
    whl = wheel(tmp_path, "fixture-py-server", ["fixture-py-server"])
    assert main(["inspect", f"pypi:{whl}"]) == 1
    err = capsys.readouterr().err
    assert "fixture-py-server 1.0.0 in" in err and "no MCP SDK found under" in err
