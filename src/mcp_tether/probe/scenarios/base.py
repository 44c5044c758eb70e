"""What a scenario is: the one place that says everything about it.

A scenario says how it applies (host styles), how the probe's client ends (`client_run`,
run in the forked client), what the keeper triggers itself (`keeper_trigger`), when its
window ends (`window_end`), how its verdict is judged and which verdict passes, and its
LEVEL: `spec` (what the MCP specification asks of a stdio server) or `robust` (what real
hosts need beyond it). A new scenario is one new module in this package, named in
`ORDER` in `__init__.py`.

Plain classes, no dataclasses: keepers import their scenario on their start-up path.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mcp_tether.probe.spec import SPEC

if TYPE_CHECKING:
    from mcp_tether.probe.client import Client
    from mcp_tether.probe.keeper import Keeper


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
    needs_call = False  # only with --call
    # The server dying before the trigger is an early exit only once the handshake is
    # known to have finished (the close scenario's trigger follows it at once).
    early_exit_needs_handshake = False

    def applies(self, host_style: str) -> bool:
        return True

    # -- in the client (forked by the keeper), after the server is spawned ----------------
    stdin_at_eof = False  # start the server with stdin already at EOF (/dev/null)

    def client_run(self, c: Client) -> None:
        """Handshake, then end the way this scenario's client ends. Must not return."""
        if not c.handshake():
            c.pump(None)
        self.client_end(c)

    def client_end(self, c: Client) -> None:
        """Default: tell the keeper to pull the trigger, then serve until killed."""
        c.emit("ready")
        c.pump(None)

    # -- in the keeper --------------------------------------------------------------------
    def keeper_trigger(self, k: Keeper) -> None:
        """On the client's "ready": the trigger the keeper pulls itself (none by default)."""

    def window_end(self, k: Keeper) -> float | None:
        """The instant the tree must be gone by (asked again while watching); None: error."""
        assert k.facts.trigger is not None
        return k.facts.trigger + k.spec.effective_window

    def passes(self, verdict: str, guarded: bool) -> bool:
        return verdict == self.pass_verdict
