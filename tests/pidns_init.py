"""A minimal init for running the test suite in a pid namespace of its own.

`tests/run` starts: unshare --pid --fork --mount-proc python tests/pidns_init.py CMD...
As pid 1 of the namespace this reaps every orphan (a real init's job: without it,
orphans stay zombies), forwards SIGTERM/SIGINT/SIGHUP to CMD, and exits with CMD's
status. When pid 1 exits the kernel SIGKILLs everything left in the namespace, so no
test can leave a process running on the host (tini does the same for containers).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys


def main() -> int:
    argv = sys.argv[1:]
    if not argv:
        print("usage: pidns_init.py CMD [ARGS...]", file=sys.stderr)
        return 2
    child = os.fork()
    if child == 0:
        os.setpgid(0, 0)
        try:
            os.execvp(argv[0], argv)
        except OSError as exc:
            print(f"pidns_init: {argv[0]}: {exc.strerror}", file=sys.stderr)
            os._exit(127)

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    status = 0
    while True:
        try:
            pid, st = os.wait()
        except ChildProcessError:
            return status
        except InterruptedError:
            continue
        if pid == child:
            status = os.waitstatus_to_exitcode(st)
            status = 128 - status if status < 0 else status
            # Keep reaping briefly is pointless: our exit kills the namespace.
            return status


if __name__ == "__main__":
    sys.exit(main())
