"""Every install recipe of the Node package runs as written, in a fresh server project.

The recipes are read from the pages and from the probe's remedy (tests/doc_recipes.py),
never retyped here: each runs through `sh -e` with current npm in a new folder holding a
Node server's package.json and lock (git-initialised, so a recipe's `git add` runs too),
`/path/to/mcp-tether` being a fresh copy of this checkout's node/ folder. npm runs
offline, from the cache the Node fixtures' install filled (the same pinned SDK), through
npm's own environment (`npm_config_offline`), so the commands stay the pages' own.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import node_tether_env
from doc_recipes import Recipe, mentions, recipes, shell
from mcp_tether.lab import node_env
from mcp_tether.probe import ProbeOptions, probe

pytestmark = [
    pytest.mark.skipif(node_env.missing_tools() is not None, reason="needs node and npm"),
    pytest.mark.slow,
    pytest.mark.node,
]
REPO = Path(__file__).resolve().parents[1]
NPM_ENV = {"npm_config_offline": "true", "npm_config_audit": "false",
           "npm_config_fund": "false", "npm_config_update_notifier": "false"}


def run_recipe(recipe: Recipe, project: Path, clone: Path) -> None:
    """The recipe's lines: those in mcp-tether's clone there, the rest in `project`."""
    if not (clone / "node").exists():
        shutil.copytree(REPO / "node", clone / "node")
    in_clone, in_project = shell(recipe, clone)
    env = {**os.environ, **NPM_ENV}
    for script, cwd in ((in_clone, clone), (in_project, project)):
        if not script:
            continue
        out = subprocess.run(["sh", "-e", "-c", script], cwd=cwd, env=env, capture_output=True,
                             text=True, stdin=subprocess.DEVNULL, timeout=300)
        assert out.returncode == 0, f"{recipe.where}:\n{script}\n{out.stdout[-2000:]}" \
            f"{out.stderr[-2000:]}"


def server_project(where: Path) -> Path:
    """A Node server's repository before the recipe: its package.json and lock (the
    pinned SDK, so npm resolves from its cache), a git repository."""
    where.mkdir(parents=True)
    for name in ("package.json", "package-lock.json"):
        shutil.copy2(REPO / "tests" / "node" / name, where / name)
    subprocess.run(["git", "init", "-q"], cwd=where, check=True, stdin=subprocess.DEVNULL)
    return where


@pytest.fixture(scope="module")
def npm_cache() -> None:
    node_tether_env.ensure()  # fills npm's cache with the pinned SDKs


@pytest.mark.parametrize("recipe", recipes(), ids=lambda r: r.where)
def test_an_install_recipe_runs_as_written_and_its_server_then_exits_on_eof(
        recipe: Recipe, tmp_path: Path, npm_cache: None) -> None:
    """1. a fresh server project, and the recipe's lines as the page says them;
    2. the package is installed inside the project (no link back to the clone), and a
       recipe that vendors the tarball records it as `file:vendor/...` (`npm ci` on a
       runner resolves it); 3. the page's example server, its one line added, passes
       the probe's `close` there."""
    project = server_project(tmp_path / "server")
    run_recipe(recipe, project, tmp_path / "clone")
    installed = project / "node_modules" / "mcp-tether"
    assert (installed / "register.mjs").exists() and not installed.is_symlink()
    dep = json.loads((project / "package.json").read_text())["dependencies"]["mcp-tether"]
    assert dep.startswith("file:") and dep.endswith(".tgz"), dep
    if recipe.vendors:
        assert dep.startswith("file:vendor/mcp-tether-"), dep
    shutil.copy2(REPO / "examples" / "node-server" / "server.mjs", project / "server.mjs")
    report = probe(["node", "server.mjs"], ProbeOptions(scenarios=("close",), cwd=str(project),
                                                        ready_timeout=60))
    assert [(r.verdict, r.passed) for r in report.results] == [("exited", True)], \
        [(r.verdict, r.diagnosis) for r in report.results]


def test_every_install_command_on_a_page_belongs_to_a_recipe_run_here() -> None:
    """A page naming an install command outside the recipes above (a new one) fails."""
    texts = [r.text for r in recipes()]
    stray = [(page, line) for page, line in mentions()
             if not any(line.strip() in t or t in line for t in texts)]
    assert not stray, stray
