"""docs/ci.md's workflow, run end to end here as a runner would run it.

The server's repository is made with the page's own lines (tests/doc_recipes.py reads
them from docs/ci.md): `npm pack` of node/ committed under vendor/, `npm install
./vendor/mcp-tether-<version>.tgz` (package.json then says `file:vendor/...`, which
resolves inside the repository), `git add`. A "runner" then gets a fresh
copy of the repository's files only (no node_modules, no mcp-tether checkout beside it),
runs the workflow's `npm ci`, and the action's steps (tests/test_action.py's runner, the
action checked out at this repository, as `uses: OWNER/mcp-tether@REF` fetches it).
npm runs offline, from the cache the fixtures' install filled (tests/node: the same
pinned SDK versions).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import node_tether_env
from doc_recipes import recipes
from mcp_tether.lab import node_env
from test_action import run_action
from test_install_recipes import run_recipe

pytestmark = [
    pytest.mark.skipif(node_env.missing_tools() is not None, reason="needs node and npm"),
    pytest.mark.slow,
]
REPO = Path(__file__).resolve().parents[1]


def _npm(args: list[str], cwd: Path) -> None:
    out = subprocess.run(["npm", *args, "--offline", "--no-audit", "--no-fund"], cwd=cwd,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A runner's checkout of a server repository set up as docs/ci.md says."""
    fx = node_tether_env.ensure()  # fills npm's cache with the pinned SDKs
    dev = tmp_path_factory.mktemp("server-repo")
    # A server repository pinning both SDK lines (the fixtures' own package.json and lock,
    # so that npm resolves everything from its cache).
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(REPO / "tests" / "node" / name, dev / name)
    shutil.copy2(fx / "server.mjs", dev / "server.mjs")
    # The page's lines, copied from it (not retyped): pack into vendor/, install the
    # tarball, `git add` what the repository commits.
    subprocess.run(["git", "init", "-q"], cwd=dev, check=True, stdin=subprocess.DEVNULL)
    (recipe,) = [r for r in recipes() if r.where.startswith("docs/ci.md ")]
    run_recipe(recipe, dev, tmp_path_factory.mktemp("clone"))
    (tarball,) = (dev / "vendor").glob("mcp-tether-*.tgz")
    deps = json.loads((dev / "package.json").read_text())["dependencies"]
    assert deps["mcp-tether"] == f"file:vendor/{tarball.name}", deps
    # The runner's checkout: what the repository tracks (the recipe's `git add`, and the
    # server's own file), nothing else.
    subprocess.run(["git", "add", "server.mjs"], cwd=dev, check=True, stdin=subprocess.DEVNULL)
    tracked = subprocess.run(["git", "ls-files"], cwd=dev, check=True, capture_output=True,
                             text=True, stdin=subprocess.DEVNULL).stdout.split()
    assert {"package.json", "package-lock.json", f"vendor/{tarball.name}"} <= set(tracked)
    runner = tmp_path_factory.mktemp("runner") / "work"
    for name in tracked:
        (runner / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(dev / name, runner / name)
    _npm(["ci"], runner)  # the workflow's install step
    assert (runner / "node_modules" / "mcp-tether" / "register.mjs").exists()
    return runner


def test_the_ci_workflow_passes_a_tethered_server_at_robust(checkout: Path) -> None:
    """`npm ci`, then the action with `command: node server.mjs ...` and `level: robust`."""
    status, summary = run_action({"command": "node server.mjs v1 sleep tether",
                                  "level": "robust"}, checkout)
    assert status == 0, summary
    assert "exit status: **0**" in summary


def test_the_ci_workflow_passes_a_server_with_no_line_under_the_preload(
        checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step's `env: NODE_OPTIONS: --import=mcp-tether/register` and no line at all;
    the same server without it fails, with the diagnosis in the summary."""
    monkeypatch.setenv("NODE_OPTIONS", "--import=mcp-tether/register")
    status, summary = run_action({"command": "node server.mjs v2 sleep plain",
                                  "level": "robust"}, checkout)
    assert status == 0, summary
    monkeypatch.delenv("NODE_OPTIONS")
    status, summary = run_action({"command": "node server.mjs v2 sleep plain",
                                  "scenarios": "close"}, checkout)
    assert status == 1 and "**Diagnosis.**" in summary, summary
    assert os.path.exists(checkout / "mcp-tether-junit.xml")
