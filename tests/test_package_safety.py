"""Probing a package runs none of its install code unless asked; a bad cache folder or a
bad spec is one line and exit 2.

The packages are local fixtures (an npm folder whose preinstall/postinstall write marker
files); npm runs offline, so nothing reaches a registry.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tether.cli import main
from package_fixtures import NODE, go_offline, npm_folder

needs_node = pytest.mark.skipif(not NODE, reason="node, npm and npx are needed")
NOBODY = 65534


@pytest.fixture(autouse=True)
def offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    return go_offline(tmp_path, monkeypatch)


def _scripted(tmp_path: Path) -> tuple[Path, list[Path]]:
    """A server package whose install scripts leave a file each behind."""
    d = npm_folder(tmp_path, "fixture-scripted", {"fixture-scripted": "server.js"})
    marks = [tmp_path / "preinstall-ran", tmp_path / "postinstall-ran"]
    meta = json.loads((d / "package.json").read_text())
    meta["scripts"] = {"preinstall": f"node -e \"require('fs').writeFileSync('{marks[0]}', '')\"",
                       "postinstall": f"node -e \"require('fs').writeFileSync('{marks[1]}', '')\""}
    (d / "package.json").write_text(json.dumps(meta))
    return d, marks


@needs_node
def test_probing_an_npm_package_runs_its_install_scripts_only_with_allow_scripts(
        tmp_path: Path, offline: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """1. `probe npm:DIR` installs with --ignore-scripts: no marker, one line saying so and
    naming the package that has scripts; 2. --allow-scripts runs them, in a cache folder
    of its own (the unscripted tree is not reused); 3. the unscripted run again is cached."""
    d, marks = _scripted(tmp_path)
    argv = ["probe", f"npm:{d}", "--launch", "direct", "-s", "close", "--json"]
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert not any(m.exists() for m in marks)
    said = [ln for ln in err.splitlines() if "install scripts not run" in ln]
    assert len(said) == 1 and "fixture-scripted" in said[0] and "--allow-scripts" in said[0]
    assert main(argv + ["--allow-scripts"]) == 0
    err = capsys.readouterr().err
    assert all(m.exists() for m in marks) and "install scripts ran" in err
    assert sorted(p.name for p in offline.iterdir()) == ["npm-ignore-scripts", "npm-scripts"]
    for m in marks:
        m.unlink()
    assert main(argv) == 0
    assert "(cached in" in capsys.readouterr().err and not any(m.exists() for m in marks)


def test_a_pypi_package_installs_from_wheels_only_unless_allow_build(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A source folder needs a build: refused (exit 127, naming --allow-build) before any
    build backend runs; --allow-build with an npm spec is a usage error."""
    src = tmp_path / "srcpkg"
    src.mkdir()
    (src / "setup.py").write_text(f"open({str(tmp_path / 'built')!r}, 'w')\n"
                                  "from setuptools import setup; setup(name='srcpkg')\n")
    assert main(["inspect", f"pypi:{src}"]) == 127
    err = capsys.readouterr().err
    assert "--allow-build" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "built").exists()
    assert main(["inspect", "--allow-build", "npm:x@1.0.0"]) == 2
    assert "--allow-build is for pypi:" in capsys.readouterr().err


@pytest.mark.parametrize("bad", ["npm:", "pypi:", "npm:@", "npm: ", "pypi:a b", "npm:a b",
                                 "npm:@scope/", "pypi:==1.0", "npm:foo@", "npm:@scope/foo@",
                                 "pypi:foo==", "pypi:--index-url=x"])
def test_an_empty_or_malformed_spec_is_exit_2_with_the_accepted_forms(
        bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Not 127 "command not found": one usage line that lists the forms a spec takes."""
    for cmd in (["probe", bad], ["inspect", bad]):
        assert main(cmd) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "npm:NAME[@VERSION]" in err[0] and \
            "pypi:NAME[==VERSION]" in err[0], err


@pytest.fixture
def world_dir() -> Iterator[Path]:
    """A folder under /tmp that other users can enter (pytest's tmp_path is 0700)."""
    d = Path(tempfile.mkdtemp(prefix="mcp-tether-cache-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _bad_cache(kind: str, tmp_path: Path, world: Path) -> tuple[Path, str]:
    """Make the bad cache of this kind; (the MCP_TETHER_CACHE value, what the line says)."""
    if kind == "file":
        p = tmp_path / "a-file"
        p.write_text("")
        return p, "a file, not a directory"
    if kind == "under-file":
        (tmp_path / "a-file").write_text("")
        return tmp_path / "a-file" / "cache", "is a file, not a directory"
    if kind == "dangling":
        p = tmp_path / "link"
        p.symlink_to(tmp_path / "gone")
        return p, "a dangling symlink"
    if kind == "foreign":
        target = world / "theirs"
        target.mkdir()
        if os.geteuid() == 0:
            os.chown(target, NOBODY, NOBODY)
        else:
            target = Path("/")  # root's: not the caller's
        p = tmp_path / "link"
        p.symlink_to(target)
        return p, "not by you"
    assert kind == "not-writable"
    p = world / "cache"
    p.mkdir()
    p.chmod(0o555)
    return p, "not writable by you"


@pytest.mark.parametrize("kind", ["file", "under-file", "dangling", "foreign", "not-writable"])
def test_a_bad_cache_folder_is_one_line_and_exit_2_naming_it(
        kind: str, tmp_path: Path, world_dir: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A file, a path under a file, a dangling symlink, a symlink to another user's folder,
    a folder you cannot write: `cache PATH: what is wrong`, exit 2, nothing installed."""
    cache, says = _bad_cache(kind, tmp_path, world_dir)
    argv = ["inspect", "npm:fixture-not-installed@1.0.0"]
    if kind == "not-writable" and os.geteuid() == 0:
        # Root writes through any mode bits: the folder is made read-only by a bind
        # mount, in a mount namespace of the child's own (nothing outside sees it).
        env = dict(os.environ, MCP_TETHER_CACHE=str(cache))
        script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && shift && exec "$@"'
        got = subprocess.run(["unshare", "--mount", "sh", "-c", script, "sh", str(cache),
                              sys.executable, "-m", "mcp_tether", *argv],
                             capture_output=True, text=True, env=env, check=False)
        if "mcp-tether" not in got.stderr:
            pytest.skip(f"no read-only bind mount here: {got.stderr.strip()[-160:]}")
        code, err = got.returncode, got.stderr
    else:
        monkeypatch.setenv("MCP_TETHER_CACHE", str(cache))
        code, err = main(argv), capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert f"cache {cache}" in lines[0] and says in lines[0], lines[0]
