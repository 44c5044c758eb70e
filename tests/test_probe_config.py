"""`probe --host/--config`: every configured server probed at once, one summary."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from mcp_tether.cli import main

pytestmark = pytest.mark.linux
MINI = str(Path(__file__).parent / "servers" / "mini.py")


def _config(tmp_path: Path) -> Path:
    cfg = tmp_path / "mcp.json"
    cfg.write_text(
        "{\n  // a JSONC comment, as hosts allow\n  \"mcpServers\": {\n"
        f'    "good": {{"command": {json.dumps(sys.executable)},'
        f' "args": ["-S", {json.dumps(MINI)}]}},\n'
        f'    "lingering": {{"command": {json.dumps(sys.executable)},'
        f' "args": ["-S", {json.dumps(MINI)}, "--thread"]}},\n'
        '    "missing": {"command": "no-such-server-anywhere"},\n'
        '    "remote": {"url": "https://example.invalid/mcp"}\n'
        "  }\n}\n"
    )
    return cfg


def test_every_configured_server_is_probed_and_a_broken_one_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a config with a good, a lingering, a missing and a remote server;
    2. one JSON summary: verdicts for the two that run, an error row, a skipped row."""
    code = main(["probe", "--config", str(_config(tmp_path)), "--yes", "--json",
                 "-s", "close,exit", "--window", "0.5", "--grace", "0.3", "--term-grace", "0.3"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["passed"] is False
    by = {s["name"]: {r["scenario"]: r for r in s["results"]} for s in out["servers"]}
    good = {sc: r["verdict"] for sc, r in by["good"].items()}
    assert good == {"close": "exited", "exit": "exited"}
    assert by["lingering"]["exit"]["verdict"] == "orphaned"
    assert by["missing"]["*"]["verdict"] == "error"
    assert "command not found" in by["missing"]["*"]["detail"]
    assert by["remote"]["*"]["verdict"] == "skipped"


def test_probing_configured_servers_asks_first_and_refuses_without_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", open("/dev/null"))  # noqa: SIM115  # closed by pytest
    assert main(["probe", "--config", str(_config(tmp_path))]) == 2
    err = capsys.readouterr().err
    assert "will start these servers for real" in err and "--yes" in err


def test_a_malformed_config_is_a_one_line_error_with_its_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": {"command": "a",}\n')
    assert main(["probe", "--config", str(bad), "--yes"]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:" in err and "Traceback" not in err
