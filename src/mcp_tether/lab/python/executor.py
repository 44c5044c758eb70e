"""Fixture `executor`: a ThreadPoolExecutor whose worker loops forever.

Executor workers are joined at interpreter exit (concurrent.futures registers that with
`threading._register_atexit`), so after `run()` returns on stdin EOF the process hangs.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as a script

if TYPE_CHECKING:  # mypy checks the package path; scripts never need mcp_tether
    from mcp_tether.lab.python._common import log, make_server, serve, tick
else:
    from _common import log, make_server, serve, tick

mcp = make_server("executor")

if __name__ == "__main__":
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="worker")
    pool.submit(tick, 0.1)
    log("ready")
    serve(mcp)
    log("run_returned")  # ...then the exit hook joins the worker forever
