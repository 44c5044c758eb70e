"""tests/node_tap.py: a failed `node --test` run names its failing subtest in the
assertion message, however many subtests pass after it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import node_tap

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="needs node")

SUITE = """\
import { test } from "node:test";
import assert from "node:assert";
test("group", async (t) => {
  await t.test("the one that fails", () => assert.strictEqual(1, 2, "one is not two"));
  for (let i = 0; i < 60; i++) await t.test(`passing ${i} ${"x".repeat(60)}`, () => {});
});
"""


def test_a_failing_subtest_is_named_even_when_the_tail_is_all_passing_ones(
        tmp_path: Path) -> None:
    (tmp_path / "a.test.mjs").write_text(SUITE)
    run = subprocess.run(["node", "--test", "--test-reporter=tap", "a.test.mjs"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         stdin=subprocess.DEVNULL)
    assert run.returncode != 0
    assert "the one that fails" not in run.stdout[-4000:]  # what the old message showed
    failed = node_tap.failures(run.stdout)
    assert any("the one that fails" in f and "one is not two" in f for f in failed), failed
    assert "the one that fails" in node_tap.report(run)


def test_a_clean_run_reports_no_failure() -> None:
    run = subprocess.CompletedProcess(["node"], 0, "ok 1 - a\n  ---\n  ...\n", "")
    assert node_tap.failures(run.stdout) == []
    assert "no `not ok` line" in node_tap.report(run)
