"""The artifacts a release would publish, installed as a user gets them, and run.

Every other test runs the editable checkout; these build the wheel and the sdist
(`python -m build`: the sdist first, then the wheel from the unpacked sdist, so a file the
sdist forgets fails the wheel too) and `npm pack` the Node package, install each into a
clean place (a fresh venv, a fresh npm project; never the checkout, never editable) and
run them from a folder that is neither: `mcp-tether --version`, the lab's reference block
(its Node fixtures from the lab's cache, as a user's first run leaves them), and every
entry of the Node package's `exports`, read from the installed package.json, so an export
added later is covered the day it lands. Both packages carry one version.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import mcp_tether
from tools import needed

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "mcp_tether"
NODE = ROOT / "node"
INSTALL_TIMEOUT = 600  # seconds: a cold pip cache downloads the dependencies


def _version_in_init() -> str:
    m = re.search(r'^__version__ = "([^"]+)"$', (SRC / "__init__.py").read_text(), re.M)
    assert m, "src/mcp_tether/__init__.py sets no __version__"
    return m.group(1)


def test_the_python_and_the_node_package_carry_one_version() -> None:
    """pyproject reads the version from `__version__`; node/package.json repeats it."""
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^dynamic = \["version"\]$', pyproject, re.M), "pyproject: static version"
    assert 'path = "src/mcp_tether/__init__.py"' in pyproject
    node = json.loads((NODE / "package.json").read_text())["version"]
    assert node == _version_in_init() == mcp_tether.__version__, (
        f"node/package.json says {node}, src/mcp_tether/__init__.py {_version_in_init()}")


def _run(argv: list[str | Path], cwd: Path, timeout: float = INSTALL_TIMEOUT,
         env: dict[str, str] | None = None) -> str:
    """Run to the end; a failure shows its output."""
    p = subprocess.run([str(a) for a in argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                       capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, (f"{argv} exited {p.returncode}\nstdout: {p.stdout[-4000:]}\n"
                               f"stderr: {p.stderr[-4000:]}")
    return p.stdout


def _clean_env() -> dict[str, str]:
    """Our environment without what would point a child back at the checkout: the
    test's own venv (editable) leaves PATH too, when the tests run in one."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "NODE_PATH")}
    if sys.prefix != sys.base_prefix:
        ours = os.path.join(sys.prefix, "")
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                      if not os.path.join(p, "").startswith(ours))
    return env


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The wheel and the sdist, built from the checkout in isolation."""
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--outdir", out, ROOT], cwd=out)
    yield out


def _one(folder: Path, pattern: str) -> Path:
    (found,) = folder.glob(pattern)
    return found


def _shipped_sources() -> set[str]:
    """Every file of the package in the checkout, as a path under `mcp_tether/`."""
    skip = {"__pycache__", "node_modules"}
    return {f"mcp_tether/{p.relative_to(SRC).as_posix()}" for p in SRC.rglob("*")
            if p.is_file() and not skip & set(p.relative_to(SRC).parts)
            and p.suffix not in (".pyc", ".pyo")}


@pytest.mark.slow
def test_the_wheel_and_the_sdist_hold_every_file_of_the_package(dist: Path) -> None:
    """1. Both are named for `__version__`; 2. the wheel holds every file under
    src/mcp_tether (the lab's servers, the Node fixtures and their package-lock.json, the
    hostcheck recorder, py.typed), and no node_modules; 3. so does the sdist."""
    version = _version_in_init()
    wheel = _one(dist, f"mcp_tether-{version}-py3-none-any.whl")
    sdist = _one(dist, f"mcp_tether-{version}.tar.gz")
    in_wheel = set(zipfile.ZipFile(wheel).namelist())
    want = _shipped_sources()
    assert "mcp_tether/lab/node/package-lock.json" in want  # the lab needs it to `npm ci`
    assert not want - in_wheel, f"missing from the wheel: {sorted(want - in_wheel)}"
    assert not [n for n in in_wheel if "node_modules" in n]
    with tarfile.open(sdist) as t:
        in_sdist = {n.split("/", 1)[1] for n in t.getnames() if "/" in n}
    assert not {f"src/{w}" for w in want} - in_sdist


def _fresh_venv(where: Path, artifact: Path) -> Path:
    """A new venv (not the test's, no system site-packages) with `artifact` installed
    by pip, dependencies resolved as a user's pip resolves them; its bin folder. The
    venv gets no pip of its own (ensurepip's 4 s of CPU, which mcp-tether never uses):
    this test's pip installs into it (`pip --python`), as `pipx` and `uv` install."""
    venv.EnvBuilder(with_pip=False, clear=True).create(where)
    bindir = where / "bin"
    _run([sys.executable, "-m", "pip", "--python", bindir / "python", "install", "-q",
          "--disable-pip-version-check", artifact], cwd=where.parent, env=_clean_env())
    return bindir


def _installed_here(bindir: Path, elsewhere: Path) -> None:
    """`mcp-tether --version` answers, and `mcp_tether` loads from the venv, not src/."""
    out = _run([bindir / "mcp-tether", "--version"], cwd=elsewhere, env=_clean_env())
    assert out.strip() == f"mcp-tether {_version_in_init()}"
    where = _run([bindir / "python", "-c", "import mcp_tether; print(mcp_tether.__file__)"],
                 cwd=elsewhere, env=_clean_env()).strip()
    assert Path(where).is_relative_to(bindir.parent), where
    assert not Path(where).is_relative_to(ROOT / "src"), where


@pytest.mark.slow
@pytest.mark.node
def test_the_installed_wheel_runs_the_lab_reference_block_from_another_folder(
    dist: Path, tmp_path: Path,
) -> None:
    """1. A fresh venv with the wheel; 2. --version from a folder outside the checkout;
    3. `mcp-tether lab --block reference --json` there: every row ran (exit 0) and the
    leaking fixtures leak, the fixed one does not."""
    needed("node")
    needed("npm")
    bindir = _fresh_venv(tmp_path / "venv", _one(dist, "*.whl"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _installed_here(bindir, elsewhere)
    doc = json.loads(_run([bindir / "mcp-tether", "lab", "--block", "reference", "--json",
                           "-q"], cwd=elsewhere, env=_clean_env()))
    rows = doc["results"]
    verdicts = {r["label"]: r["verdict"] for r in rows}
    assert len(rows) == 10 and "error" not in verdicts.values(), verdicts
    assert any(v == "orphaned" for label, v in verdicts.items() if "timer" in label), verdicts
    assert all(v != "orphaned" for label, v in verdicts.items() if "fixed" in label), verdicts


@pytest.mark.slow
def test_the_installed_sdist_answers_from_another_folder(dist: Path, tmp_path: Path) -> None:
    """A fresh venv with the sdist (pip builds it, as for a platform with no wheel)."""
    bindir = _fresh_venv(tmp_path / "venv", _one(dist, "*.tar.gz"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    _installed_here(bindir, elsewhere)


# Imports every entry of the installed package's `exports` both ways (import and
# require), checks each resolves inside node_modules/mcp-tether, that every file the
# exports name (types included) is in the tarball, and prints what each entry exports.
CHECK_MJS = r"""
import { createRequire } from "node:module";
import { existsSync, readFileSync, realpathSync } from "node:fs";
import { dirname, join, sep } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const pkgFile = require.resolve("mcp-tether/package.json");
const home = realpathSync(dirname(pkgFile)) + sep;
const pkg = JSON.parse(readFileSync(pkgFile, "utf8"));
const files = (v) => typeof v === "string" ? [v] : Object.values(v).flatMap(files);
const out = { version: pkg.version, exports: {} };
for (const [key, value] of Object.entries(pkg.exports)) {
  for (const f of files(value)) {
    if (!existsSync(join(home, f))) throw new Error(`${key}: ${f} is not in the tarball`);
  }
  if (key.endsWith(".json")) continue;
  const spec = "mcp-tether" + key.slice(1);
  const esmUrl = import.meta.resolve(spec);
  const cjsPath = require.resolve(spec);
  for (const p of [fileURLToPath(esmUrl), cjsPath]) {
    if (!realpathSync(p).startsWith(home)) throw new Error(`${spec} resolved to ${p}`);
  }
  const esm = await import(spec);
  const cjs = require(spec);
  out.exports[key] = { esm: Object.keys(esm).sort(), cjs: Object.keys(cjs).sort() };
}
process.stdout.write(JSON.stringify(out));
process.exit(0);
"""


@pytest.mark.slow
@pytest.mark.node
def test_the_npm_tarball_imports_every_export_in_a_fresh_project(tmp_path: Path) -> None:
    """1. `npm pack` of node/; 2. a fresh npm project installs the tarball (no registry
    needed: the package has no dependencies); 3. every export imports as ESM and as
    CommonJS from inside node_modules, every file the exports name is packed;
    `tether` and `StdioClientTransport` are functions there."""
    needed("node")
    npm = needed("npm")
    packed = tmp_path / "packed"
    packed.mkdir()
    _run([npm, "pack", "--silent", "--pack-destination", packed, NODE], cwd=tmp_path)
    tarball = _one(packed, "mcp-tether-*.tgz")
    assert tarball.name == f"mcp-tether-{_version_in_init()}.tgz"
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(json.dumps(
        {"name": "fresh-project", "version": "1.0.0", "private": True, "type": "module"}))
    _run([npm, "install", "--no-audit", "--no-fund", "--offline", tarball], cwd=project,
         env=_clean_env())
    (project / "check.mjs").write_text(CHECK_MJS)
    # stdin stays an open pipe while the check runs: an export that arms a tether on
    # import (a preload) must not see EOF and end the check before it prints.
    p = subprocess.Popen(["node", "check.mjs"], cwd=project, env=_clean_env(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:  # our own child, not yet reaped: its pid is still ours
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    doc = json.loads(out)
    assert doc["version"] == _version_in_init()
    exports = doc["exports"]
    assert {".", "./client"} <= set(exports)
    assert "tether" in exports["."]["esm"] and "tether" in exports["."]["cjs"]
    assert "StdioClientTransport" in exports["./client"]["esm"]
    assert (project / "node_modules" / "mcp-tether").resolve().is_relative_to(project)
    kinds = _run(["node", "--input-type=module", "-e",
                  'import { tether } from "mcp-tether"; '
                  'import { StdioClientTransport } from "mcp-tether/client"; '
                  "console.log(typeof tether, typeof StdioClientTransport)"],
                 cwd=project, env=_clean_env())
    assert kinds.split() == ["function", "function"]
