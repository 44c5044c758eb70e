"""Run a bench script inside a pid namespace of its own (as `tests/run` does for tests).

`enter()` re-executes the calling script under `unshare --pid --fork --mount-proc` with
tests/pidns_init.py as the namespace's init. When that init exits, the kernel SIGKILLs
everything left in the namespace, so a bench that makes fast-forking or escaping
processes (the soak's pid-hoppers) cannot leave one on the machine, even if the bench
itself is interrupted or SIGKILLed. Returns normally (without re-executing) when
already inside one (MCP_TETHER_PIDNS=1). Without unshare (not root, no user namespaces)
it refuses unless allow_host is true.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

INIT = Path(__file__).resolve().parent.parent / "tests" / "pidns_init.py"


def enter(allow_host: bool = False) -> None:
    if os.environ.get("MCP_TETHER_PIDNS") == "1":
        return
    unshare = shutil.which("unshare")
    ok = unshare is not None and subprocess.run(
        [unshare, "--pid", "--fork", "--mount-proc", "true"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ).returncode == 0
    if not ok:
        if allow_host:
            print("bench: no pid namespace here; running in the host namespace",
                  file=sys.stderr)
            return
        sys.exit("bench: cannot create a pid namespace (unshare --pid); "
                 "pass --host-namespace to run anyway")
    os.environ["MCP_TETHER_PIDNS"] = "1"
    argv = [sys.executable, os.path.abspath(sys.argv[0]), *sys.argv[1:]]
    os.execv(unshare, [unshare, "--pid", "--fork", "--mount-proc", sys.executable,
                       str(INIT), *argv])
