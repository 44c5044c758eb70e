"""The labels mcp-tether puts on the containers it follows, for every room that reads them.

Their own module so that reading a container's labels (`ps`, `reap`, with a daemon up)
does not load the follower's machinery (argv parsing, shutil, signal).
"""

from __future__ import annotations

__all__ = ["LABEL_RUN", "LABEL_OWNER"]

LABEL_RUN = "io.mcp-tether.run"  # on every `docker run` the guard or the probe follows
LABEL_OWNER = "io.mcp-tether.owner"  # `<pid>:<start ticks>:<pid ns inode>` of the follower
