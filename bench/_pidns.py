"""Run a bench script inside a pid namespace of its own (as `tests/run` does for tests).

`enter()` re-executes the calling script under `unshare --pid --fork --mount-proc` with
tests/pidns_init.py as the namespace's init. When that init exits, the kernel SIGKILLs
everything left in the namespace, so a bench that makes fast-forking or escaping
processes (the soak's pid-hoppers) cannot leave one on the machine, even if the bench
itself is interrupted or SIGKILLed. Returns normally (without re-executing) when
already inside one (MCP_TETHER_PIDNS=1). With `net=True` the namespace has a network of
its own with only a loopback: a bench of real hosts sends nothing off the machine.
Without unshare (not root, no user namespaces) it refuses unless allow_host is true.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

INIT = Path(__file__).resolve().parent.parent / "tests" / "pidns_init.py"


def enter(allow_host: bool = False, net: bool = False) -> None:
    """`net`: a network namespace too, with only its loopback up (`loopback_up()` runs
    inside): what the bench starts cannot reach beyond the machine."""
    if os.environ.get("MCP_TETHER_PIDNS") == "1":
        if net and os.environ.get("MCP_TETHER_NETNS") == "1":
            loopback_up()
        return
    unshare = shutil.which("unshare")
    flags = ["--pid", "--fork", "--mount-proc", *(["--net"] if net else [])]
    ok = unshare is not None and subprocess.run(
        [unshare, *flags, "true"],
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
    if net:
        os.environ["MCP_TETHER_NETNS"] = "1"
    argv = [sys.executable, os.path.abspath(sys.argv[0]), *sys.argv[1:]]
    assert unshare is not None
    os.execv(unshare, [unshare, *flags, sys.executable, str(INIT), *argv])


def loopback_up() -> None:
    """Bring `lo` up in a fresh network namespace (it starts down: 127.0.0.1 unreachable)."""
    ip = shutil.which("ip")
    if ip is None or subprocess.run([ip, "link", "set", "lo", "up"],
                                    stdin=subprocess.DEVNULL).returncode != 0:
        sys.exit("bench: cannot bring the loopback up in the network namespace (ip link)")
