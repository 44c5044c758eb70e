"""The ladder's timing logic, on a fake target and a virtual clock (no waiting)."""

from __future__ import annotations

import signal

from mcp_tether.ladder import run_ladder


class FakeServer:
    """Exits `exits_after` virtual seconds after the named action (or never)."""

    def __init__(self, exits_on: str | None, after: float = 0.01) -> None:
        self.now = 100.0
        self.exits_on = exits_on
        self.after = after
        self.exit_at: float | None = None
        self.actions: list[tuple[str, float]] = []

    def clock(self) -> float:
        return self.now

    def _maybe(self, action: str) -> None:
        self.actions.append((action, self.now))
        if action == self.exits_on and self.exit_at is None:
            self.exit_at = self.now + self.after

    def close_stdin(self) -> None:
        self._maybe("close-stdin")

    def signal(self, sig: int) -> str:
        if self.exit_at is not None and self.exit_at <= self.now:
            return "gone"
        self._maybe({signal.SIGTERM: "sigterm", signal.SIGKILL: "sigkill"}[sig])
        return "sent"

    def wait(self, timeout: float) -> float | None:
        if self.exit_at is not None and self.exit_at <= self.now + timeout:
            self.now = max(self.now, self.exit_at)
            return self.exit_at
        self.now += timeout
        return None


def test_a_server_that_exits_on_eof_ends_at_the_first_rung() -> None:
    s = FakeServer("close-stdin", 0.01)
    r = run_ladder(s, clock=s.clock)
    assert r.ended_by == "close-stdin"
    assert [x.action for x in r.rungs] == ["close-stdin"]
    assert r.exited_at == 100.01


def test_a_server_that_ignores_eof_is_killed_by_sigterm_after_the_grace() -> None:
    s = FakeServer("sigterm", 0.005)
    r = run_ladder(s, clock=s.clock)
    assert r.ended_by == "sigterm"
    assert [(x.action, x.sent_at) for x in r.rungs] == [("close-stdin", 100.0), ("sigterm", 102.0)]


def test_a_server_that_ignores_sigterm_needs_sigkill_after_both_graces() -> None:
    s = FakeServer("sigkill", 0.001)
    r = run_ladder(s, grace=0.5, term_grace=1.5, clock=s.clock)
    assert r.ended_by == "sigkill"
    assert [x.sent_at for x in r.rungs] == [100.0, 100.5, 102.0]


def test_an_unkillable_server_is_reported_as_surviving() -> None:
    s = FakeServer(None)
    r = run_ladder(s, clock=s.clock)
    assert r.survived and r.ended_by is None
    assert [x.outcome for x in r.rungs] == ["timeout", "timeout", "timeout"]


def test_without_stdin_to_close_the_ladder_waits_then_signals() -> None:
    s = FakeServer("sigterm")
    r = run_ladder(s, close_stdin=False, grace=0, clock=s.clock)
    assert r.ended_by == "sigterm"
    assert ("close-stdin", 100.0) not in s.actions
