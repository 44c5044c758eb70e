"""`reap --watch`: keep the machine clean, and the service files that run it.

Guarantees:
- Each round is a fresh scan, a `plan()` with the caller's `min_age` (60 s by default
  here: a server that was just started by a host that is still setting it up is left
  alone) and `allow` patterns, then `reap_servers()`; one line per action: what, the
  evidence, the memory reclaimed. A leaked process left alone is reported once, with the
  reason, not every round.
- `should_stop` is polled between rounds and during the wait, so SIGTERM (systemd,
  launchd) or Ctrl-C ends the loop between actions, never in the middle of a ladder.
- Read/write counters are sampled every round and kept across rounds
  (`superseded.Samples`, also written to the user's samples file): with
  `include={"superseded"}` a copy is ended only after `superseded_min_age` seconds in
  which it had no traffic while a newer copy under the same host was used. What an
  entry's command was is remembered the same way, so an old copy is known as the
  entry's after an edit. Abandonment is tracked for `ps`'s hint (`abandoned.Tracker`)
  and never ends anything.
- `after_round(result, outcomes)` sees each round's scan and what it ended, once the
  round is done (`reap --watch --textfile` writes the metrics file there).
- A file the watch cannot write (the samples file here, the caller's textfile) never
  stops it: `WriteErrors` counts every failed write by file and says each distinct
  error once, whatever the number of rounds it lasts (a full disk is one line, not one
  every 30 s); the counts go into the next textfile that can be written.
- One line per record whatever a command line or a process name holds: each line is
  escaped for the terminal (`escape.terminal`: a newline is shown as `\n`).
- The service files run `reap --watch --yes` as the user, never as root.
"""

from __future__ import annotations

import html
import os
import shlex
import shutil
import sys
import time
from collections.abc import Callable
from typing import Any

from mcp_tether import ladder
from mcp_tether.escape import terminal, xml_text
from mcp_tether.proc import ProcessId
from mcp_tether.scan.abandoned import Tracker
from mcp_tether.scan.find import scan
from mcp_tether.scan.model import ScanResult
from mcp_tether.scan.reap import ReapOutcome, plan, reap_servers
from mcp_tether.scan.render import size_text
from mcp_tether.scan.superseded import SUPERSEDED_MIN_AGE, Samples

__all__ = ["watch", "WATCH_MIN_AGE", "WATCH_INTERVAL", "render_unit", "describe", "WriteErrors",
           "WRITTEN_FILES"]

WATCH_MIN_AGE = 60.0  # seconds: the reaper scripts people write skip the first minute
WATCH_INTERVAL = 30.0


# The files a watch writes, as the `file` label of mcp_tether_file_write_errors_total
# names them: how a line names each, and what a failed write of it costs.
WRITTEN_FILES = {
    "textfile": ("--textfile", "the next file written counts the failed writes "
                 "(mcp_tether_file_write_errors_total)"),
    "samples": ("samples file", "the read/write samples are kept in memory meanwhile"),
}


class WriteErrors:
    """Failed writes of the files a watch keeps, by file: each counted, and each distinct
    error (file, path, reason) said once through `say`, however many rounds it lasts."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self.say = say
        self.counts = dict.fromkeys(WRITTEN_FILES, 0)
        self._said: set[tuple[str, str, str]] = set()

    def failed(self, file: str, path: str, exc: OSError) -> None:
        self.counts[file] = self.counts.get(file, 0) + 1
        why = exc.strerror or str(exc)
        if (file, path, why) in self._said:
            return
        self._said.add((file, path, why))
        name, cost = WRITTEN_FILES.get(file, (file, ""))
        self.say(terminal(f"{name} {path} not written: {why}; reaping goes on, {cost} "
                          "(each error said once)"))


def describe(o: ReapOutcome) -> str:
    """One line for one action: what, evidence, memory reclaimed."""
    s = o.server
    w = s.what
    name = w.package or (s.config[0]["name"] if s.config else None) or " ".join(s.shown)[:60]
    if w.version:
        name += f"@{w.version}"
    sdk = f" sdk {w.sdk} {w.sdk_version or ''}".rstrip() if w.sdk else ""
    how = f" by {o.ended_by}" if o.ended_by else ""
    return terminal(f"{o.outcome}{how}: pid {s.pid} {name}{sdk} [{', '.join(s.evidence)}] "
                    f"reclaimed {size_text(o.reclaimed_bytes)}")


def watch(*, interval: float = WATCH_INTERVAL, min_age: float = WATCH_MIN_AGE,
          allow: list[str] | None = None, include: set[str] | None = None,
          grace: float = ladder.TERM_GRACE, scan_kwargs: dict[str, Any] | None = None,
          emit: Callable[[str], None] = print,
          should_stop: Callable[[], bool] = lambda: False,
          rounds: int | None = None,
          superseded_min_age: float = SUPERSEDED_MIN_AGE,
          samples: Samples | None = None,
          after_round: Callable[[ScanResult, list[ReapOutcome]], None] | None = None,
          errors: WriteErrors | None = None,
          ) -> list[ReapOutcome]:
    """Scan, end leaks, wait `interval`; until `should_stop()` (or `rounds` rounds).
    `errors`: where a samples file that could not be written is counted and said."""
    told: set[tuple[ProcessId, str]] = set()
    done: list[ReapOutcome] = []
    tracker = Tracker()
    kept = samples if samples is not None else Samples.open()
    n = 0
    while not should_stop():
        result = scan(**(scan_kwargs or {}), tracker=tracker, samples=kept)
        if kept.unsaved is not None and errors is not None:
            errors.failed("samples", kept.path or "", kept.unsaved)
        p = plan(result, include or set(), min_age, allow, superseded_min_age)
        for sk in p.skipped:
            key = (sk.server.ident, sk.reason.split(" (")[0])
            if key not in told:
                told.add(key)
                emit(terminal(f"left: pid {sk.server.pid} {' '.join(sk.server.shown)[:60]}: "
                              f"{sk.reason}"))
        outcomes = reap_servers(p.chosen, grace)
        for o in outcomes:
            emit(describe(o))
        done += outcomes
        if after_round is not None:
            after_round(result, outcomes)
        n += 1
        if rounds is not None and n >= rounds:
            break
        end = time.monotonic() + interval
        while not should_stop():  # short slices: a stop request is seen within 0.2 s
            left = end - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(0.2, left))
    return done


def _program(opts: list[str]) -> list[str]:
    exe = shutil.which("mcp-tether") or shutil.which(
        "mcp-tether", path=os.path.dirname(sys.executable))
    head = [os.path.abspath(exe)] if exe else [sys.executable, "-m", "mcp_tether"]
    return [*head, "reap", "--watch", "--yes", *opts]


def render_unit(kind: str, opts: list[str]) -> str:
    """A ready user service running `reap --watch --yes` with `opts`."""
    argv = _program(opts)
    if kind == "systemd":
        return "\n".join([
            "# ~/.config/systemd/user/mcp-tether-reap.service",
            "# then: systemctl --user daemon-reload && "
            "systemctl --user enable --now mcp-tether-reap",
            "[Unit]",
            "Description=mcp-tether: end leaked MCP stdio servers as they appear",
            "",
            "[Service]",
            "Type=simple",
            "ExecStart=" + " ".join(shlex.quote(a) for a in argv),
            "Restart=on-failure",
            "SuccessExitStatus=129 130 143",  # stopped by SIGHUP, SIGINT, SIGTERM: 128+N
            "RestartSec=10",
            "NoNewPrivileges=yes",
            "",
            "[Install]",
            "WantedBy=default.target",
            "",
        ])
    if kind == "launchd":
        args = "\n".join(f"    <string>{html.escape(xml_text(a), quote=False)}</string>"
                         for a in argv)
        return f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- ~/Library/LaunchAgents/dev.mcp-tether.reap.plist
     then: launchctl load -w ~/Library/LaunchAgents/dev.mcp-tether.reap.plist -->
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>dev.mcp-tether.reap</string>
  <key>ProgramArguments</key>
  <array>
{args}
  </array>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <true/>
  <key>StandardErrorPath</key>
  <string>/tmp/mcp-tether-reap.log</string>
  <key>StandardOutPath</key>
  <string>/tmp/mcp-tether-reap.log</string>
</dict>
</plist>
"""
    raise ValueError(f"unknown unit kind {kind!r} (systemd or launchd)")
