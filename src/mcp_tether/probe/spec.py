"""What one scenario run needs to know, typed, and how it crosses into the keeper.

A `Spec` is built by the API (`api.build_specs`), written by the runner to the keeper's
stdin as one JSON document (never argv: a 140 KB environment would not fit), and read
back by the keeper. Its defaults are the ladder's (`ladder.py`): the
client's ladder is the SDKs' 2 s + 2 s, and the window a tree gets after its client
went is one such rung.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any

from mcp_tether.ladder import GRACE_AFTER_EOF, TERM_GRACE

__all__ = [
    "Spec", "WINDOW", "IDLE", "READY_TIMEOUT", "READY_CEILING", "STARVED_CAP", "SPEC",
    "ROBUST", "LEVELS",
]

# The window: as long after its client went as the ladder gives a server after EOF.
WINDOW = GRACE_AFTER_EOF
IDLE = 3.0  # seconds of silence in the idle scenario
# Each handshake answer: the wait gives up once the server's tree has been idle (no CPU
# used, no process started or ended, none runnable) for READY_TIMEOUT seconds in a row,
# or, however busy it stays, after READY_CEILING times that (a server importing on a
# loaded machine is slow, not broken).
READY_TIMEOUT = 10.0
READY_CEILING = 6
# The window is extended by the time the tree waited for a CPU (a loaded machine), by
# at most this many windows.
STARVED_CAP = 5

SPEC = "spec"  # what the MCP specification asks of a stdio server
ROBUST = "robust"  # what real hosts need beyond it
LEVELS = (SPEC, ROBUST)

@dataclass(eq=False, repr=False)
class Spec:
    """One scenario against one server command, as the keeper runs it."""

    argv: list[str]
    scenario: str
    host_style: str = "node"
    env: dict[str, str] | None = None  # the server's whole environment; None: ours
    cwd: str | None = None
    window: float = WINDOW
    idle: float = IDLE
    ready_timeout: float = READY_TIMEOUT
    call: list[Any] | None = None  # [tool name, arguments]
    grace: float = GRACE_AFTER_EOF  # the client's ladder
    term_grace: float = TERM_GRACE
    horizon: float | None = None  # watch survivors this long after the window
    guard: list[float] | None = None  # [grace, term_grace] of our own guard in front
    startup: float | None = None  # the server's start-up time, if already measured
    parent: int | None = None  # the runner's pid, so a keeper can see it is gone

    def __post_init__(self) -> None:
        self.argv = list(self.argv)  # the JSON gives numbers as ints where they are whole
        self.window = float(self.window)
        self.idle = float(self.idle)
        self.ready_timeout = float(self.ready_timeout)
        self.grace = float(self.grace)
        self.term_grace = float(self.term_grace)

    @property
    def horizon_s(self) -> float:
        """After the window, how long survivors are watched (default: the client's ladder)."""
        return self.grace + self.term_grace if self.horizon is None else float(self.horizon)

    @property
    def ready_ceiling(self) -> float:
        """The longest one handshake answer is awaited, however busy the server stays."""
        return self.ready_timeout * READY_CEILING

    @property
    def guarded(self) -> bool:
        return self.guard is not None

    @property
    def effective_window(self) -> float:
        """A guarded server is judged by the guard's promise: its grace + term-grace."""
        if self.guard is None:
            return self.window
        return float(self.guard[0]) + float(self.guard[1]) + self.window

    @property
    def server_key(self) -> str:
        """Scenarios of the same server share what one of them measured (start-up)."""
        return json.dumps([self.argv, self.cwd, self.host_style, sorted((self.env or {}).items())])

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Spec:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    @classmethod
    def from_json(cls, text: str | bytes) -> Spec:
        return cls.from_dict(json.loads(text))

    def replace(self, **changes: Any) -> Spec:
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        return f"Spec({self.scenario!r}, {self.host_style!r}, {self.argv!r})"
