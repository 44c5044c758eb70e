"""What a scenario is: the one place that says everything about it.

A scenario says how it applies (host styles), how the probe's client ends (`client_run`,
run in the forked client), what the keeper triggers itself (`keeper_trigger`), when its
window ends (`window`), how its verdict is judged and which verdict passes, and its
LEVEL: `spec` (what the MCP specification asks of a stdio server) or `robust` (what real
hosts need beyond it). A new scenario is one new module in this package, named in
`_ALL` in `__init__.py`.

Guarantees:
- A scenario sees the keeper and the client only through the two ports below
  (`KeeperPort`, `ClientPort`); it never imports them, and never writes their state:
  what it finds out it returns (a `Trigger`, the window's end, the survivors left).
- Scenario objects hold no state of a run: the one thing that changes while a window is
  watched (devnull's start-up allowance) lives in the callable `window` returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from mcp_tether.probe.spec import SPEC, Spec
from mcp_tether.proc import ProcessId

__all__ = ["Scenario", "KeeperPort", "ClientPort", "Trigger", "WindowEnd"]

# When the tree must be gone by (CLOCK_MONOTONIC); asked again while the keeper watches.
# None: the scenario cannot say (its client's ladder never finished): an error.
WindowEnd = Callable[[], float | None]


@dataclass(frozen=True)
class Trigger:
    """A trigger the keeper pulled: when, and what (eof | parent-death | sigterm | sigint).

    `missed`: the signal found the direct child already gone while its tree still held
    the client's stdio (a launcher that handed on its session): judged on the tree, the
    miss noted on the timeline."""

    at: float
    what: str
    missed: bool = False


class KeeperPort(Protocol):
    """The keeper, as a scenario may use it (implemented by `keeper.ProbeKeeper`)."""

    spec: Spec

    def kill_client(self, sig: int) -> None: ...
    def signal_server(self, sig: int, *, group: bool = False) -> bool: ...  # False: gone
    def tree_still_serving(self) -> bool: ...  # its launcher gone, its tree holds the stdio
    def live_members(self) -> list[ProcessId]: ...
    def wait_for_ladder(self) -> float | None: ...  # the client's ladder ended (None: stuck)
    def escalate(  # SIGKILL, as a host (group: its process group)
        self, live: list[ProcessId], *, group: bool = False
    ) -> list[ProcessId]: ...


class ClientPort(Protocol):
    """The probe's client, as a scenario may use it (implemented by `client.Client`)."""

    spec: Spec

    def emit(self, kind: str, **fields: Any) -> None: ...  # an event for the keeper
    def handshake(self, send_call: bool = True) -> bool: ...
    def pump(self, timeout: float | None, *, until_event: bool = False) -> None: ...
    def request(self, method: str, params: dict[str, Any] | None = None) -> int: ...
    def await_response(
        self, rid: int, timeout: float, ceiling: float | None = None
    ) -> tuple[dict[str, Any] | None, str]: ...
    def await_answer_or_end(self, rid: int) -> bool: ...
    def gone(self) -> bool: ...  # exited, and nothing of its tree holds its stdout
    def close_stdin(self) -> None: ...
    def ladder(self, *, announce: bool = False) -> None: ...  # announce: EOF is the trigger
    def fork_writer_holder(self) -> None: ...


class Scenario:
    name = ""
    description = ""  # one line: what happens; pass: what passes
    level = SPEC
    cites = ""  # the specification's own words this scenario checks (docs, --help)
    pass_verdict = "exited"
    # How the verdict is judged (verdict.decide): "window" (is the tree gone within the
    # window after the trigger?), "ladder" (which rung of the client's ladder ended it?),
    # "answer" (does it still answer?).
    judge = "window"
    trigger_what = "eof"  # eof | parent-death | sigterm | sigint
    trigger_is_client_exit = False  # on the timeline: the client's exit, not the server's EOF
    needs_call = False  # only with --call
    # The server dying before the trigger is an early exit only once the handshake is
    # known to have finished (the close scenario's trigger follows it at once).
    early_exit_needs_handshake = False

    def applies(self, host_style: str) -> bool:
        return True

    # -- in the client (forked by the keeper), after the server is spawned ----------------
    stdin_at_eof = False  # start the server with stdin already at EOF (/dev/null)

    def client_run(self, c: ClientPort) -> None:
        """Handshake, then end the way this scenario's client ends. Must not return."""
        if not c.handshake():
            c.pump(None)
        self.client_end(c)

    def client_end(self, c: ClientPort) -> None:
        """Default: tell the keeper to pull the trigger, then serve until killed."""
        c.emit("ready")
        c.pump(None)

    # -- in the keeper --------------------------------------------------------------------
    def keeper_trigger(self, k: KeeperPort) -> Trigger | None:
        """On the client's "ready": the trigger the keeper pulls itself; None when the
        server was gone before it (an early exit)."""
        raise NotImplementedError(f"{self.name}: the client says ready, nobody pulls")

    def window(self, k: KeeperPort, trigger: float) -> WindowEnd:
        """The window's end after `trigger` (default: the effective window after it)."""
        end = trigger + k.spec.effective_window
        return lambda: end

    def passes(self, verdict: str, guarded: bool) -> bool:
        return verdict == self.pass_verdict
