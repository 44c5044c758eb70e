"""Where this process stood when `mcp_tether` was first imported: (pid, ppid).

The package's `__init__` imports this module first thing, so the pair is taken as early
as a server's launch allows. The helper compares it later: a parent that died while the
server was still importing its SDK (hundreds of ms) must not go unnoticed, and a forked
child (another pid) must not mistake its parent for the launcher's.
"""

from __future__ import annotations

import os

STARTED_UNDER = (os.getpid(), os.getppid())
