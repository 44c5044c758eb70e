"""`GuardResult`: what one guarded run did, and its one-line summary for stderr.

A plain class: @dataclass pulls in inspect and ast, milliseconds on every guarded
server's launch path. Instants are time.monotonic() values.
"""

from __future__ import annotations

import signal

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs ms here
if TYPE_CHECKING:
    from mcp_tether.ladder import Rung
    from mcp_tether.proc import ProcessId
    from mcp_tether.proc.leave import Left

__all__ = ["GuardResult", "SERVER_EXIT", "STDIN_HANGUP", "PARENT_DEATH", "SIGNALLED",
           "signame"]

# Why the guard started to stop.
SERVER_EXIT = "server-exit"
STDIN_HANGUP = "stdin-hangup"
PARENT_DEATH = "parent-death"
SIGNALLED = "signal"
# The variable naming a descriptor for the outcome as one JSON line (guard/report.py,
# loaded only when it is set).
REPORT_ENV = "MCP_TETHER_REPORT_FD"


class GuardResult:
    """What one guarded run did. Instants are time.monotonic() values.

    A plain class: @dataclass pulls in inspect and ast, milliseconds on every guarded
    server's launch path.
    """

    def __init__(
        self,
        *,
        argv: list[str],
        exit_status: int,
        reason: str,
        server_pid: int,
        started_at: float,
        ended_at: float,
        triggered_at: float | None = None,
        server_exited_at: float | None = None,
        signal: int | None = None,
        server_signal: int | None = None,
        stdin_open: bool = True,
        rungs: list[Rung] | None = None,
        others: list[ProcessId] | None = None,
        escapees: list[ProcessId] | None = None,
        survivors: list[ProcessId] | None = None,
        hurried: bool = False,
        holders: list[ProcessId] | None = None,
        server_status: int | None = None,
        left: list[Left] | None = None,
    ) -> None:
        self.argv = argv
        self.exit_status = exit_status  # the server's: its code, or 128+N after signal N
        self.reason = reason  # SERVER_EXIT | STDIN_HANGUP | PARENT_DEATH | SIGNALLED
        self.server_pid = server_pid
        self.started_at = started_at  # just before the fork
        self.ended_at = ended_at  # every descendant gone (or given up on)
        self.triggered_at = triggered_at  # client gone / signal seen; None for SERVER_EXIT
        self.server_exited_at = server_exited_at  # when the guard reaped it
        self.signal = signal  # the signal that triggered, for SIGNALLED
        self.server_signal = server_signal  # the signal the server died of, if it did
        self.stdin_open = stdin_open  # False when stdin had hung up when the ladder began
        self.rungs: list[Rung] = rungs or []
        self.others: list[ProcessId] = others or []  # the server's tree besides itself
        self.escapees: list[ProcessId] = escapees or []  # of those, outside its group
        self.survivors: list[ProcessId] = survivors or []  # alive at the end: a failure
        self.hurried = hurried  # a second SIGINT sent SIGKILL at once
        # Descendants that still held our stdin/stdout when the server (a launcher)
        # exited: the guard kept guarding them instead of ending them at once.
        self.holders: list[ProcessId] = holders or []
        # The direct child's own status (differs from exit_status after a hand-over).
        self.server_status = exit_status if server_status is None else server_status
        # Processes the server detached on purpose for its user: never signalled, still
        # running (`proc.leave`).
        self.left: list[Left] = left or []

    def __repr__(self) -> str:
        return f"GuardResult({self.reason!r}, status {self.exit_status}: {self.summary()!r})"

    @property
    def elapsed(self) -> float:
        """Seconds from the trigger (or the start) until everything was gone."""
        return self.ended_at - (self.triggered_at or self.started_at)

    @property
    def server_ended_by(self) -> str:
        """"self" if the server left on its own, else the rung ("sigterm", "sigkill")."""
        if self.hurried:
            return "sigkill"
        if self.server_exited_at is None:
            return "unknown"
        by = "self"
        for rung in self.rungs:
            if rung.action in ("sigterm", "sigkill") and rung.sent_at <= self.server_exited_at:
                by = rung.action
        return by

    @property
    def ended_by(self) -> str:
        """Which rung ended the server, for machines (the guard's report): "self",
        "sigterm", "sigkill", "none" (the ladder was refused, or a holder survived) or
        "unknown". After a hand-over the server is whoever held the stdio; a SIGTERM the
        guard forwarded to the group counts as that rung."""
        if self.hurried:
            return "sigkill"
        if self.server_exited_at is None:
            return "none" if any(r.outcome == "denied" for r in self.rungs) else "unknown"
        if self.holders and self.reason != SERVER_EXIT:
            if self.survivors:
                return "none"
            last = self._last_rung_that_ended()
            return "self" if last == "close-stdin" else last
        by = self.server_ended_by
        if by == "self" and self.reason == SIGNALLED and self.signal == signal.SIGTERM:
            return "sigterm"
        return by

    def _last_rung_that_ended(self) -> str:
        done = [r for r in self.rungs if r.outcome in ("exited", "gone")]
        return done[-1].action if done else "close-stdin"

    def summary(self) -> str:
        """One line for stderr: why the guard stopped, and how the server ended."""
        t0 = self.triggered_at if self.triggered_at is not None else self.started_at
        parts: list[str] = []
        if self.reason == STDIN_HANGUP:
            parts.append("client gone (stdin hang-up)")
        elif self.reason == PARENT_DEATH:
            parts.append(
                "client gone (parent died"
                + (", stdin still open)" if self.stdin_open else ", stdin hang-up)")
            )
        elif self.reason == SIGNALLED:
            name = signame(self.signal) if self.signal else "signal"
            if self.signal in FORWARDED:
                parts.append(f"got {name}, forwarded to the server")
            else:
                parts.append(f"got {name} (not forwarded), ending the tree before leaving")
        else:
            parts.append(f"server {self._status_text()}")
        if self.holders:
            n = len(self.holders)
            parts.append(
                f"server exited with status {self.server_status} leaving {n} "
                f"process{'es' if n > 1 else ''} on its stdio (guarded on)"
            )
        if self.reason != SERVER_EXIT and not self.holders:
            by = self.server_ended_by
            if self.server_exited_at is None:
                parts.append("server did not exit")
            elif self.hurried:
                gone = _ms(t0, self.server_exited_at)
                parts.append(f"SIGKILL at once on a second SIGINT, exited after {gone}")
            elif by == "self":
                parts.append(f"server exited by itself after {_ms(t0, self.server_exited_at)}")
            else:
                sent = next(r.sent_at for r in reversed(self.rungs) if r.action == by)
                parts.append(f"{by.upper()} after {_ms(t0, sent)}")
            if self.server_exited_at is not None:
                parts[-1] += f" ({self._status_text()})"
        if self.holders and self.reason != SERVER_EXIT:
            parts.append(f"ended {self._ended_how()} (status {self.exit_status})")
        if self.others:
            last = self._last_rung_that_ended()
            how = "" if last == "close-stdin" else f" by {last.upper()}"
            n = len(self.others)
            esc = f" ({len(self.escapees)} outside its group)" if self.escapees else ""
            parts.append(f"{n} more process{'es' if n > 1 else ''} of its tree{esc} ended{how}")
        if self.left:
            n = len(self.left)
            parts.append(f"{n} process{'es' if n > 1 else ''} left running for the user")
        if self.survivors:
            pids = " ".join(str(p.pid) for p in self.survivors)
            parts.append(f"STILL ALIVE: {pids}")
        return "; ".join(parts)

    def left_lines(self) -> list[str]:
        """One line for stderr per process left for the user: pid, command, why (the
        command and the detail are the server's text: shown, not obeyed, on a terminal)."""
        if not self.left:
            return []
        from mcp_tether.escape import terminal  # only when something was left

        return [f"left {v.info.pid} ({terminal(v.command)}): {terminal(v.reason())}"
                for v in self.left]

    def _ended_how(self) -> str:
        last = self._last_rung_that_ended()
        if last == "close-stdin":
            return "by itself after the hang-up" if self.stdin_open is False else "by itself"
        return f"by {last.upper()}"

    def _status_text(self) -> str:
        if self.server_signal is not None:
            name = signame(self.server_signal)
            return f"died of {name}, status {self.exit_status}"
        return f"exited with status {self.exit_status}"


# What the guard forwards (guard.session.STOP_SIGNALS; not imported: the session
# module is the loop, and this one is read without it).
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def signame(sig: int) -> str:
    """SIGUSR1; `signal 40` for a real-time signal the enum has no name for. Every signal
    name the package prints comes from here (stdlib only: the guard's start-up path)."""
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _ms(a: float, b: float) -> str:
    return f"{max(0.0, b - a) * 1000:.0f} ms"

