"""The ways a host can end, what the spec asks of it then, and the verdict (a pure function).

Guarantees:
- One `HostScenario` per way the driver ends a host (or, `model`, drives it through
  tool calls): its action, whether it needs a terminal (a pty) or a config file to
  edit, and the words of the MCP specification
  (stdio transport, 2026-07-28 and the 2025-11-25 lifecycle) for what a client should
  do to its server then. Nothing here touches a process.
- `decide()` turns what was observed (did the host exit, which recorder processes were
  still alive after it, which were alive while it lived on after a reconnect) into one
  verdict: `clean`, `server-left`, `wrapper-child-left`, `abandoned`, or
  `host-stayed` / `skipped` / `error` when the scenario could not be judged (the keeper
  adds `preempted`: the host was already ending the server before the trigger).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["HostScenario", "SCENARIOS", "VERDICTS", "PASSING", "SPEC_SHUTDOWN", "decide"]

# Spec text, quoted (basic/transports/stdio, 2026-07-28; basic/lifecycle 2025-11-25).
SPEC_SHUTDOWN = (
    "the client SHOULD close the server's stdin, wait for the server to exit, and "
    "terminate it forcibly (POSIX: SIGTERM, then SIGKILL) if it does not exit within a "
    "reasonable time"
)
SPEC_BOUNDARY = (
    "clients SHOULD NOT use an individual task, thread, or conversation as the lifetime "
    "boundary for the stdio process"
)


@dataclass(frozen=True)
class HostScenario:
    """One way the driver ends a host (not a probe scenario: `probe/scenarios/`)."""

    name: str
    action: str  # what the driver does to the host once it initialized the recorder
    title: str
    spec: str  # what a client should do to its server, in the spec's words
    pty: bool = False  # needs the host under a pseudo-terminal
    config: bool = False  # needs a host config file (--host NAME) to edit
    model: bool = False  # drives the host through tool calls (the stand-in model)


SCENARIOS: dict[str, HostScenario] = {s.name: s for s in (
    HostScenario("exit", "quit", "its own clean exit (the quit text if given, then stdin EOF)",
                 "On shutdown " + SPEC_SHUTDOWN + "."),
    HostScenario("sigint", "SIGINT", "SIGINT sent to the host (Ctrl-C, `kill -INT`)",
                 "A host that quits on SIGINT is shutting down: " + SPEC_SHUTDOWN + "."),
    HostScenario("sighup", "hangup", "its terminal closed (the pty's master end closed: SIGHUP)",
                 "A host that quits because its terminal went away is shutting down: "
                 + SPEC_SHUTDOWN + ".", pty=True),
    HostScenario("sigterm", "SIGTERM", "SIGTERM sent to the host",
                 "A host that quits on SIGTERM is shutting down: " + SPEC_SHUTDOWN + "."),
    HostScenario("sigkill", "SIGKILL", "SIGKILL sent to the host (a crash)",
                 "The host can do nothing once SIGKILLed; the spec's remaining safeguard is "
                 "the server's: \"Servers SHOULD exit promptly when their standard input is "
                 "closed or reads return end-of-file\". A host that wants no orphans after a "
                 "crash must arrange it before (a process group or job object, a guard, "
                 "PR_SET_PDEATHSIG)."),
    HostScenario("reconnect", "config-edit",
                 "the recorder's config entry edited while the host runs",
                 "A server the host stops using is a shutdown of that connection: "
                 + SPEC_SHUTDOWN + "; " + SPEC_BOUNDARY + ".", config=True),
    # Tool-calling scenarios: the stand-in model (`modelapi.py`) drives the host through
    # the recorder's tools by a script (`calls.py`); they measure, the verdict is
    # `measured` (or the reconnect's).
    HostScenario("idle", "calls", "calls with a pause longer than --min-age between them",
                 "A host keeps its server for as long as it may use it: " + SPEC_BOUNDARY
                 + ".", model=True),
    HostScenario("subagents", "calls", "two subagents in parallel (one steady, one thinking "
                 "longer than --min-age), each closed; then the oldest copy ended",
                 "The spec on copies per conversation: " + SPEC_BOUNDARY + ".", model=True),
    HostScenario("calls-reconnect", "calls", "calls before and after the recorder's entry is "
                 "edited, then the old copy ended",
                 "A server the host stops using is a shutdown of that connection: "
                 + SPEC_SHUTDOWN + "; " + SPEC_BOUNDARY + ".", config=True, model=True),
)}

VERDICTS = ("clean", "server-left", "wrapper-child-left", "abandoned", "host-stayed",
            "preempted", "measured", "skipped", "error")
# Verdicts that do not fail the check: nothing was left (clean), the host rightly did not
# quit on this (host-stayed: its servers are still its own), or it did not apply
# (skipped; preempted: what was left is the host's own shutdown's, not the scenario's).
PASSING = ("clean", "host-stayed", "preempted", "measured", "skipped")
# Verdicts that judge nothing: the report lists them apart from the clean ones.
UNJUDGED = ("preempted", "skipped", "error")

VERDICT_WORDS = {
    "clean": "nothing of the server was left after the host",
    "server-left": "the server the host started was still running after the host was gone",
    "wrapper-child-left": "the host ended the server it started, but the server's child "
                          "(a real server behind an npx or sh -c wrapper) was left",
    "abandoned": "the host dropped a server it no longer used and left it running",
    "host-stayed": "the host did not quit on this; its server is still its own",
    "preempted": "no verdict: the host began ending the server (closed its stdin or "
                 "signalled it) before the scenario's trigger, so what was left is the "
                 "outcome of its own shutdown",
    "measured": "the host was driven through its tool calls; what it did is in the facts",
    "skipped": "the scenario does not apply to this host",
    "error": "the scenario could not be judged",
}


def decide(
    *,
    host_exited: bool,
    left_roles: list[str],
    abandoned_roles: list[str] | None = None,
    direct: str = "server",
) -> str:
    """The verdict of one scenario from what was observed.

    host_exited:     the host process was gone before the settle time ended.
    left_roles:      roles ("server", "grandchild") of recorder processes alive after it
                     (or, for a host still running, at the end of the wait for it).
    abandoned_roles: roles of an earlier copy still alive while the host lived on with
                     a newer one (reconnect); None when the scenario does not look.
    direct:          the role of the host's own child ("wrapper" when one stands before
                     the server); every other role is behind it.
    """
    if abandoned_roles:
        return "abandoned"
    behind = [r for r in left_roles if r != direct]
    if not host_exited:
        # Still running: its server is its own, unless it ended that server and left
        # what was behind it (a one-shot host done with it, then hanging).
        if behind and direct not in left_roles:
            return "wrapper-child-left"
        return "host-stayed"
    if direct in left_roles:
        return "server-left"
    if behind:
        return "wrapper-child-left"
    return "clean"
