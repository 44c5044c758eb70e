"""SIGKILL to the probe's process group leaves nothing.

A CI system cancelling a job kills the job's whole process group at once. The probe's
keepers live in groups of their own and end every server's tree when the probe is gone.
Each case runs the probe in a pid namespace of its own whose pid 1 (tests/fixtures/
groupkill.py) kills the probe's group at one moment and then counts, exactly, what is
left in the namespace: every orphan reparents to it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
HARNESS = str(HERE / "fixtures" / "groupkill.py")
SERVER = [sys.executable, str(HERE / "servers" / "launcher.py"), "serve", "--ignore-eof",
          "--child"]


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    return subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                          capture_output=True).returncode == 0


pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux pid namespaces"),
    pytest.mark.skipif(not _can_unshare(), reason="unshare --pid not permitted here"),
]


@pytest.mark.parametrize("moment", ["startup", "mid", "window"])
@pytest.mark.parametrize("style", ["node", "python"])
def test_a_group_kill_of_the_probe_leaves_no_process(style: str, moment: str,
                                                     tmp_path: Path) -> None:
    """1. probe a server that ignores EOF and has a child; 2. SIGKILL the probe's group at
    the moment; 3. nothing of any scenario's tree is left in the namespace."""
    probe = [sys.executable, "-m", "mcp_tether", "probe", "--host-style", style, "--", *SERVER]
    out = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, HARNESS, moment, style,
         str(tmp_path), "--", *probe],
        capture_output=True, timeout=300, env=dict(os.environ),
    )
    report = json.loads(out.stdout.decode().strip().splitlines()[-1])
    assert "error" not in report, (report, out.stderr.decode()[-2000:])
    assert report["left"] == [], (report, out.stderr.decode()[-2000:])
