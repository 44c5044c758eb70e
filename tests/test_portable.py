"""What the portable backend (psutil + POSIX, macOS's lot) promises where Linux promises
more: `ps` and `reap` without a look at other processes' fds (docs/platforms.md).

These run under `MCP_TETHER_BACKEND=portable` (CI's second pass); under the Linux
backend the stronger promises are tested in test_scan*.py instead.
"""

from __future__ import annotations

import json
import sys

import pytest

from mcp_tether import platform
from mcp_tether.proc import SAME, compare
from scan_lab import FAKE_SERVER, Lab, entry, ps_json, run_cli

pytestmark = pytest.mark.skipif(platform.BACKEND == "linux",
                                reason="asserts the portable backend's weaker promises")


def test_a_leak_whose_stdin_cannot_be_seen_is_unknown_and_reap_ends_nothing(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. a client starts a server and is SIGKILLed (on Linux: leaked, and reaped);
    2. ps --json lists the orphan, never "leaked" nor "stdin without a writer";
    3. reap --yes --include guess ends nothing: the orphan and a bystander live on."""
    orphan = lab.pair().orphan()
    bystander = lab.popen([sys.executable, "-c", "import signal; signal.pause()"])
    doc = ps_json(capsys)
    e = entry(doc, orphan.pid)
    assert e is not None, doc
    assert e["state"] == "unknown" and "stdin-no-writer" not in e["evidence"], e
    assert e["stdin"]["writer"] != "no", e  # today "n/a": not seen, so not "no writer"
    rc, out, _ = run_cli(capsys, "reap", "--yes", "--include", "guess", "--json",
                         "--grace", "1")
    assert rc == 0, out
    assert json.loads(out)["results"] == []
    assert compare(orphan) == SAME and bystander.poll() is None


def test_leaked_servers_of_no_mcp_name_are_listed_unknown_with_the_reason_and_never_reaped(
    lab: Lab, capsys: pytest.CaptureFixture[str]
) -> None:
    """1. three servers whose command names no MCP (a script that imports the SDK), each
    leaked by its SIGKILLed client (on Linux: found by evidence, leaked, reaped);
    2. `ps` lists each `unknown`, saying why (the far end is not visible here), in the
    table and in --json; 3. `reap --yes` ends none of them."""
    leaked = []
    for n in range(3):
        script = lab.script(f"s{n}/server.py", FAKE_SERVER.format(
            imports="if False:\n    import mcp"))
        leaked.append(lab.pair([sys.executable, str(script)]).orphan())
    doc = ps_json(capsys)
    for ident in leaked:
        e = entry(doc, ident.pid)
        assert e is not None, [s["command"] for s in doc["results"]]
        assert e["state"] == "unknown" and "far-end-unseen" in e["evidence"], e
    rc, out, _ = run_cli(capsys, "ps")
    assert rc == 0
    rows = [ln for ln in out.splitlines() if ln.startswith("unknown ")]
    assert {int(r.split()[1]) for r in rows} >= {i.pid for i in leaked}, out
    assert "3 unknown (a far end not visible here: never reaped)" in out \
        or "unknown (a far end not visible here" in out, out
    rc, out, _ = run_cli(capsys, "reap", "--yes", "--json", "--grace", "1")
    assert rc == 0 and json.loads(out)["results"] == [], out
    assert all(compare(i) == SAME for i in leaked)
