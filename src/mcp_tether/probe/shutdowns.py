"""The Node package's shutdown records: how the probe knows a server shut down through tether().

The Python end of the contract written by node/lib/output/report.cjs. With
`MCP_TETHER_SHUTDOWN_REPORT=<file>` in a Node server's environment, each shutdown that
ran through its `tether()` (the one line or the `mcp-tether/register` preload) appends
one JSON line to that file after ending its descendants and before it exits: `version`
(1), `pid`, `start`, `reason` (`stdin-end`, `signal:SIGTERM`, `host-gone`...), `status`,
`children`: {`found`, `ended_by` ("sigterm" | "sigkill" | "none" | "none-found" |
"unknown"), `survivors`}, `armed`: {`by` ("tether()" | "preload"), `at`: when it armed,
in seconds on the clock the platform's process start times are read on (Linux: since
boot), as a survivor's evidence `started_at` is; absent in a record of an older
package}. A server that died any other way (Node's default on a signal that came before
its handlers, a crash) writes nothing.

From the moment it arms, the tether marks the environment its descendants inherit:
`MCP_TETHER_TREE` (`TREE_MARK`) holds `<pid>:<start>` of each tether whose tree a
process was started in; a survivor's evidence reads that one variable (`tether_marks`).

Guarantees:
- `ShutdownFile()` makes an empty file of its own (mode 0600); `offer(env)` names it in
  the environment the server will get; `read()` returns the records of this version,
  skipping any line that is not one (a reader never searches a human message); `close()`
  removes the file. Read once; later calls return the same list.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any, TypeGuard

if TYPE_CHECKING:
    from mcp_tether.probe.record import TetherShutdown

__all__ = ["ENV", "TREE_MARK", "VERSION", "ShutdownFile", "mark_of"]

ENV = "MCP_TETHER_SHUTDOWN_REPORT"
TREE_MARK = "MCP_TETHER_TREE"  # node/lib/terminate/descendants.cjs MARK
VERSION = 1
MAX_BYTES = 64 * 1024  # a tree of tethered Node processes writes a few lines


class ShutdownFile:
    """One scenario's file of Node shutdown records (see the module docstring)."""

    def __init__(self) -> None:
        fd, self.path = tempfile.mkstemp(prefix="mcp-tether-shutdowns-", suffix=".jsonl")
        os.close(fd)
        self._records: list[TetherShutdown] | None = None

    def offer(self, env: MutableMapping[str, str] | None) -> None:
        (os.environ if env is None else env)[ENV] = self.path

    def read(self) -> list[TetherShutdown]:
        if self._records is not None:
            return self._records
        self._records = []
        try:
            with open(self.path, "rb") as fh:
                data = fh.read(MAX_BYTES)
        except OSError:
            return self._records
        for line in data.splitlines():
            with contextlib.suppress(ValueError):
                rec = json.loads(line)
                if _valid(rec):
                    self._records.append(rec)
        return self._records

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.unlink(self.path)


def mark_of(rec: TetherShutdown) -> str | None:
    """The mark a record's tether put in its descendants' environment (`<pid>:<start>`)."""
    return f"{rec['pid']}:{rec['start']}" if rec.get("start") else None


def _valid(rec: Any) -> TypeGuard[TetherShutdown]:
    if not isinstance(rec, dict) or rec.get("version") != VERSION:
        return False
    children = rec.get("children")
    return (isinstance(rec.get("pid"), int) and isinstance(rec.get("reason"), str)
            and isinstance(children, dict) and isinstance(children.get("found"), int)
            and isinstance(children.get("ended_by"), str)
            and isinstance(children.get("survivors"), list))
