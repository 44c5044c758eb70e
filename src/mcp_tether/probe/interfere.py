"""Scenarios that cannot share a machine: telling interference apart, and running alone.

The probe runs scenarios in parallel, each against a fresh copy of the server. A server
that binds a fixed port (and kills whatever holds it) breaks its siblings: one copy
finds the address in use, or dies of a signal none of ours sent. Those failures say
nothing about the server's lifecycle, so `run_specs` re-runs them one at a time.

Guarantees:
- `interference(result)` is a pure function of one scenario's recorded result: a reason
  string or None, only on evidence: a failure with the address-in-use words in the
  server's stderr, or a server that died of a signal the probe did not send (before the
  trigger, or one the scenario never sends). The latter counts even on a pass: a server
  SIGKILLed by its sibling "exited", but not by its own doing. SIGPIPE and SIGHUP are
  not foreign: a client that goes away causes them.
- A re-run result replaces the first one and carries `rerun`: why, the first verdict,
  and whether the result changed (verdict, pass, or exit status: a "pass" by a server
  SIGKILLed by its sibling, then exit 0 alone, changed); `suggest_jobs_1` is True exactly
  when some result changed, the case where `--jobs 1` is the way to probe this server.
"""

from __future__ import annotations

import re
import signal
from collections.abc import Sequence
from typing import TYPE_CHECKING

from mcp_tether.guard.result import signame

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord

__all__ = ["interference", "mark_rerun", "suggest_jobs_1", "rerun_note"]

_ADDRESS_IN_USE = re.compile(
    r"EADDRINUSE|address already in use|port \S+ (?:is )?(?:already )?in use|"
    r"only one usage of each socket address", re.I)
# The signal each probe step sends to the server (timeline event names).
_SENT = {"sigterm": signal.SIGTERM, "sigint": signal.SIGINT, "sigkill": signal.SIGKILL}
_OURS = (signal.SIGPIPE, signal.SIGHUP)  # what a client going away causes: never foreign


def interference(r: ScenarioRecord) -> str | None:
    """Why this failed result looks like another scenario's doing, or None."""
    if r.get("verdict") in ("skipped", None):
        return None
    tail = str(r.get("stderr_tail") or "")
    m = _ADDRESS_IN_USE.search(tail)
    if m is not None and not r.get("passed"):  # "error" too: it died before answering
        return f"its stderr says the address was in use ({m.group(0)})"
    if r.get("verdict") == "error":
        return None  # not started (no such command...): no status to read
    status = r.get("exit_status")
    if isinstance(status, int) and 128 < status < 128 + 65 and status - 128 not in _OURS:
        sig = status - 128
        sent = {_SENT[e["what"]] for e in r.get("events") or [] if e.get("what") in _SENT}
        if r.get("verdict") == "early-exit" or sig not in sent:
            return f"the server died of {signame(sig)}, which the probe did not send"
    return None


def mark_rerun(first: ScenarioRecord, again: ScenarioRecord, why: str) -> ScenarioRecord:
    """`again` (the scenario run alone) with a record of the first, parallel run."""
    again["rerun"] = {"alone": True, "why": why, "first_verdict": first.get("verdict"),
                      "changed": any(first.get(k) != again.get(k)
                                     for k in ("verdict", "passed", "exit_status"))}
    return again


def suggest_jobs_1(results: Sequence[ScenarioRecord]) -> bool:
    return any((r.get("rerun") or {}).get("changed") for r in results)


def rerun_note(results: Sequence[ScenarioRecord]) -> str | None:
    """The line the probe prints when it re-ran scenarios one at a time; None if it did not."""
    again = [r for r in results if r.get("rerun")]
    if not again:
        return None
    names = ", ".join(f"{r['scenario']} ({r['rerun']['first_verdict']} -> {r['verdict']})"
                      for r in again)
    line = (f"re-ran {len(again)} scenario(s) one at a time, because they failed as if "
            f"another scenario's server interfered ({again[0]['rerun']['why']}): {names}")
    if suggest_jobs_1(results):
        line += ("; run alone, a result changed: copies of this server cannot run side by "
                 "side (a fixed port?): probe it with --jobs 1")
    return line
