"""`lab --json` explains its failed rows as `probe --json` does (diagnosis, remedy)."""

from __future__ import annotations

import json
import shutil

import pytest

from mcp_tether.cli import main

pytestmark = [pytest.mark.linux, pytest.mark.slow, pytest.mark.timeout(300)]


def test_lab_json_gives_each_failed_row_its_diagnosis_and_remedy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The reference block: the orphaning Node timer rows (E, F) and the SIGTERM-needing
    one (D) carry a diagnosis naming the failed guarantee and a remedy; passing rows
    carry none."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the Node rows")
    main(["lab", "--block", "reference", "--json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert (doc["schema"], doc["version"]) == ("mcp-tether/lab", 1) and doc["levels"]
    rows = {r["label"].split()[0]: r for r in doc["results"]}
    assert "mcp-tether lab: 10/10 after " in err  # progress: stderr only, one line a row
    for row in ("D", "E", "F"):
        r = rows[row]
        assert not r["passed"], r
        assert r["diagnosis"].startswith("Does not exit on stdin EOF"), r["diagnosis"]
        assert "listener" in r["remedy"] or "mcp-tether run" in r["remedy"], r["remedy"]
    for row in ("A", "G"):
        assert rows[row]["passed"] and not rows[row]["diagnosis"] and not rows[row]["remedy"]
    assert all(r["block"] == "reference" for r in rows.values())
