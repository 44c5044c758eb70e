"""Fixture `plain`: an SDK server and nothing else.

On stdin EOF the SDK's `run()` returns and nothing is left to keep the process alive,
so it exits 0 by itself: the control case every other fixture is compared with.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as a script

if TYPE_CHECKING:  # mypy checks the package path; scripts never need mcp_tether
    from mcp_tether.lab.python._common import log, make_server, serve
else:
    from _common import log, make_server, serve

mcp = make_server("plain")

if __name__ == "__main__":
    log("ready")
    serve(mcp)
    log("run_returned")  # the SDK saw EOF; interpreter shutdown follows
