"""The scenarios, their order, and which host styles they apply to.

Names are part of the JSON contract. Every verdict covers the server's whole tree.
"""

from __future__ import annotations

__all__ = ["SCENARIOS", "HOST_STYLES", "DESCRIPTIONS", "applies", "PASS_VERDICT", "VERDICTS"]

HOST_STYLES = ("node", "python")

DESCRIPTIONS: dict[str, str] = {
    "close": "client runs its shutdown ladder; pass: the tree exits before SIGTERM",
    "exit": "client exits without closing anything; pass: tree gone within the window",
    "crash": "the probe SIGKILLs the client; pass: tree gone within the window",
    "devnull": "server started with stdin already at EOF; pass: exits within the window",
    "idle": "connected and silent for --idle s, then a request; pass: it still answers",
    "half-close": "client shuts down only the write side of stdin and stays; pass: tree gone",
    "sigterm": "SIGTERM straight to the server, client alive; pass: exits promptly",
    "sigint": "SIGINT straight to the server, client alive; pass: exits promptly",
    "inherited-writer": "a forked helper keeps stdin's write end, the client is SIGKILLed "
    "(EOF never comes); pass: tree gone (needs a parent-death watch)",
}

SCENARIOS: tuple[str, ...] = tuple(DESCRIPTIONS)

VERDICTS = ("exited", "terminated", "killed", "orphaned", "alive", "early-exit", "error")

PASS_VERDICT = {name: ("alive" if name == "idle" else "exited") for name in SCENARIOS}


def applies(scenario: str, host_style: str) -> bool:
    """A pipe has no half-close: closing the write end is the whole close."""
    return not (scenario == "half-close" and host_style == "python")
