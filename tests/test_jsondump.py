"""`jsondump.dumps` writes what `json.dumps(obj, indent=N)` writes, byte for byte.

`ps --json` writes through it so that its start-up never imports json (nor the re and
enum json pulls in); these tests hold it to json's own output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_tether import jsondump
from scan_lab import DEADLINE, Lab, lab_fixture


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    yield from lab_fixture(tmp_path, monkeypatch)

CASES: list[object] = [
    {}, [], (), "", 0, -0.0, 1.5, 1e300, -1e-300, 10**40, -(10**40), True, False, None,
    float("nan"), float("inf"), float("-inf"),
    "plain", "é ü \u2028 \U0001f600 \x00 \x1f \" \\ / \n\t", "\ud800 lone surrogate",
    [1, [2, [3, []]], {}], (1, (2,), [3]),
    {"a": {"b": {"c": [None, True, {"d": ""}]}}, "e": [], "f": {}},
    {7: "int key", 2.5: "float key", True: "bool key", False: "no", None: "null key",
     "s": "str key"},
    {"servers": [{"pid": 12, "command": ["node", "/p/ü.js"], "rss_bytes": 1 << 33}]},
]


@pytest.mark.parametrize("obj", CASES, ids=range(len(CASES)))
@pytest.mark.parametrize("indent", [0, 2, 4])
def test_the_output_is_json_dumps_byte_for_byte(obj: object, indent: int) -> None:
    assert jsondump.dumps(obj, indent=indent) == json.dumps(obj, indent=indent)


def test_what_json_cannot_write_is_a_type_error_as_there() -> None:
    for bad in ({"k": object()}, [{1, 2}], {(1, 2): "tuple key"}, b"bytes"):
        with pytest.raises(TypeError):
            json.dumps(bad, indent=2)
        with pytest.raises(TypeError):
            jsondump.dumps(bad)


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs /proc")
def test_a_real_ps_document_with_a_leak_is_written_as_json_would(lab: Lab) -> None:
    """A leaked server (a real process) in the document: every field of a server entry
    goes through the writer, and the JSON reads back to the same document."""
    from mcp_tether.scan import find

    orphan = lab.pair().orphan()
    doc = find.scan().to_dict()
    assert any(s["pid"] == orphan.pid for s in doc["servers"])
    text = jsondump.dumps(doc)
    assert text == json.dumps(doc, indent=2) and json.loads(text) == doc


PS_MODULES = ("import sys; from mcp_tether.cli import main; rc = main(['ps', '--json']); "
              "sys.stderr.write(' '.join(sys.modules)); sys.exit(rc)")


def test_ps_json_starts_without_json_argparse_typing_or_the_signal_core(
    tmp_path: Path,
) -> None:
    """`ps --json` is held to 1.5x of ps(1) (issue 10): a plain invocation on a machine
    with no container daemon loads none of json, argparse (with gettext and shutil),
    typing, dataclasses or signal. (With a daemon up, json reads the Engine API: see
    test_container_follow.)"""
    env = {**os.environ, "DOCKER_HOST": f"unix://{tmp_path}/no-daemon.sock"}
    p = subprocess.run([sys.executable, "-c", PS_MODULES], stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=DEADLINE, env=env)
    assert p.returncode == 0, p.stderr.decode()[-2000:]
    json.loads(p.stdout)
    loaded = set(p.stderr.decode().split())
    assert "mcp_tether.scan.find" in loaded and "mcp_tether.jsondump" in loaded
    heavy = loaded & {"json", "argparse", "gettext", "shutil", "typing", "dataclasses",
                      "signal", "asyncio", "subprocess", "psutil"}
    assert not heavy
