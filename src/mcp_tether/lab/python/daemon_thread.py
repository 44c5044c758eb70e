"""Fixture `daemon_thread`: a daemon thread ticking every 100 ms.

Daemon threads do not hold the interpreter open, so on stdin EOF `run()` returns and
the process exits 0, like `plain`.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as a script

if TYPE_CHECKING:  # mypy checks the package path; scripts never need mcp_tether
    from mcp_tether.lab.python._common import log, make_server, serve, tick
else:
    from _common import log, make_server, serve, tick

mcp = make_server("daemon_thread")

if __name__ == "__main__":
    threading.Thread(target=tick, name="ticker", daemon=True).start()
    log("ready")
    serve(mcp)
    log("run_returned")
