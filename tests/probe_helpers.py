"""What the probe tests share: a tiny stdlib server and the probe's fast options.

`MINI` (tests/servers/mini.py, flags for the behaviours a test needs) run by `PY`, the
interpreter without `site` (it starts in milliseconds); `FAST` shortens every wait of a
probe run (grace, SIGTERM grace, window, idle, ready timeout) to what such a server needs.
"""

from __future__ import annotations

import sys
from pathlib import Path

MINI = str(Path(__file__).parent / "servers" / "mini.py")
PY = [sys.executable, "-S"]
FAST = {"grace": 0.3, "term_grace": 0.3, "window": 1.0, "idle": 0.3, "ready_timeout": 5.0}
