"""Every `--json` prints one document with the documented envelope (docs/json.md):
`schema`, `version` first, the command's summary fields, `results` (a list) last.

Cheap invocations only: a stdlib fixture server, a config file in tmp_path, the
committed survey table re-rendered, a scan of this machine. `lab --json` (24 s) is
checked by tests/test_lab_json.py, a real `reap` (with outcomes) by tests/test_scan.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.cli import main
from mcp_tether.jsonout import VERSION

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MINI = [sys.executable, str(HERE / "servers" / "mini.py")]
FAST = ["-s", "close", "--window", "2", "--grace", "1", "--term-grace", "1"]


def _config(tmp_path: Path) -> str:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(json.dumps({"mcpServers": {"mini": {"command": MINI[0],
                                                        "args": MINI[1:]}}}))
    return str(cfg)


def _invocations(tmp_path: Path) -> dict[str, list[str]]:
    cfg = _config(tmp_path)
    return {
        "probe": ["probe", "--json", *FAST, "--", *MINI],
        "probe-config": ["probe", "--json", "--config", cfg, "--yes", *FAST],
        "survey": ["survey", str(ROOT / "docs" / "survey.list"), "--json", "--from-json",
                   str(ROOT / "docs" / "survey-table.json")],  # the pre-envelope shape
        "hostcheck": ["hostcheck", "--json", "--settle", "0.3", "-s", "exit", "--",
                      sys.executable, str(HERE / "hostcheck_hosts" / "bad_host.py"),
                      "{server}"],
        "ps": ["ps", "--json"],
        "reap-plan": ["reap", "--dry-run", "--json"],
        "hosts": ["hosts", "--json", "--config", cfg],
        "wrap": ["wrap", "--json", "--dry-run", "--config", cfg, "--tether", sys.executable],
        "unwrap": ["unwrap", "--json", "--dry-run", "--config", cfg],
        "inspect": ["inspect", "--json"],
        "inspect-command": ["inspect", "--json", "--command", " ".join(MINI)],
    }


SHAPES = ["probe", "probe-config", "survey", "hostcheck", "ps", "reap-plan", "hosts", "wrap",
          "unwrap", "inspect", "inspect-command"]


def assert_envelope(doc: Any, shape: str) -> None:
    """The envelope of docs/json.md, for `shape`."""
    assert isinstance(doc, dict), doc
    keys = list(doc)
    assert keys[:2] == ["schema", "version"] and keys[-1] == "results", keys
    assert doc["schema"] == f"mcp-tether/{shape}" and doc["version"] == VERSION
    assert isinstance(doc["results"], list)


@pytest.mark.parametrize("shape", SHAPES)
def test_every_json_output_is_one_document_with_the_envelope(
        shape: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """`json.loads(stdout)` reads the whole output: schema, version, ..., results."""
    argv = _invocations(tmp_path)[shape]
    code = main(argv)
    out, err = capfd.readouterr()
    assert code in (0, 1), (code, err)
    doc = json.loads(out)
    assert_envelope(doc, shape)
    if shape in ("probe", "probe-config", "hostcheck", "hosts", "survey"):
        assert doc["results"], doc  # each of these has something to report here
    if shape == "probe":
        assert doc["results"][0]["scenario"] == "close" and "passed" in doc
    if shape == "probe-config":
        assert doc["results"][0]["name"] == "mini" and doc["results"][0]["results"]
    if shape == "hostcheck":
        assert doc["results"][0]["scenario"] == "exit" and doc["exit_code"] == code


def test_reap_watch_refuses_json_rather_than_print_lines_that_are_not_one_document(
        capfd: pytest.CaptureFixture[str]) -> None:
    """--watch streams one text line per action: --json with it is a usage error."""
    assert main(["reap", "--watch", "--yes", "--json"]) == 2
    assert "drop --json" in capfd.readouterr().err
