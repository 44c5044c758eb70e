"""Fixture `thread`: a NON-daemon thread ticking every 100 ms forever, like a flusher.

On stdin EOF `run()` returns, but interpreter shutdown joins non-daemon threads first,
and this one never ends: the process outlives its client (python-sdk issue 2231).
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

mcp = make_server("thread")

if __name__ == "__main__":
    threading.Thread(target=tick, name="flusher", daemon=False).start()
    log("ready")
    serve(mcp)
    log("run_returned")  # ...and then threading._shutdown() waits on the flusher forever
