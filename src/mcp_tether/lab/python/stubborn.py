"""Fixture `stubborn`: a non-daemon ticking thread and a SIGTERM handler that only logs.

Survives stdin EOF (the thread) and SIGTERM (the handler): only SIGKILL ends it.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from types import FrameType
from typing import TYPE_CHECKING

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as a script

if TYPE_CHECKING:  # mypy checks the package path; scripts never need mcp_tether
    from mcp_tether.lab.python._common import log, make_server, serve, tick
else:
    from _common import log, make_server, serve, tick

mcp = make_server("stubborn")


def _ignore_term(signum: int, _frame: FrameType | None) -> None:
    log("signal", signum=signum, action="ignored")


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _ignore_term)
    threading.Thread(target=tick, name="flusher", daemon=False).start()
    log("ready")
    serve(mcp)
    log("run_returned")
