"""Progress of a long command (`lab`, `probe`, `survey`, `hostcheck`) on stderr.

Guarantees:
- Nothing is ever written to stdout: the tables and JSON there stay byte for byte what
  they are without progress.
- On a terminal (stderr a TTY, TERM not `dumb`): one live line (rich), redrawn in place,
  with the count done, the elapsed time and the last thing finished; it stays on screen
  at the end as the run's last state.
- Off a terminal (a CI log, a file, a pipe): one line per finished item,
  `mcp-tether WHAT: K/N after S s: ITEM: OUTCOME`, flushed at once, so a log shows the
  run moving instead of minutes of nothing.
- `quiet=True` writes nothing at all.

The commands' Python APIs take a `Progress` (or None) and call `expect(n)` when they know
how many items are coming and `done(item, outcome)` as each one ends; the API never
prints, the object does.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Mapping
from typing import IO, Any

from mcp_tether.escape import rich_text, terminal

__all__ = ["Progress", "add_quiet"]


def add_quiet(parser: argparse.ArgumentParser) -> None:
    """The `-q/--quiet` option of every command that shows progress."""
    parser.add_argument("-q", "--quiet", action="store_true",
                        help="no progress on stderr (a live line on a terminal, else one "
                        "line per finished item); stdout is the same either way")


def _is_terminal(stream: IO[str]) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError, OSError):  # a closed or fake stream
        return False


class Progress:
    """Counts finished items of one command and says so on stderr (see the module)."""

    def __init__(self, what: str, *, total: int = 0, quiet: bool = False,
                 stream: IO[str] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.what = what
        self.total = total
        self.count = 0
        self.quiet = quiet
        self._stream = stream
        self._clock = clock
        self._t0 = clock()
        self._live: Any = None  # rich.progress.Progress while on a terminal
        self._task: Any = None

    @property
    def stream(self) -> IO[str]:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def elapsed(self) -> float:
        return self._clock() - self._t0

    def __enter__(self) -> Progress:
        self._t0 = self._clock()
        if not self.quiet and _is_terminal(self.stream):
            self._start_live()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def expect(self, n: int) -> None:
        """`n` more items are coming (a command may learn its total in steps)."""
        self.total += n
        if self._live is not None:
            self._live.update(self._task, total=self.total)

    def done(self, item: str, outcome: str) -> None:
        """One item finished with `outcome` (a verdict, a status)."""
        self.count += 1
        of = f"/{self.total}" if self.total >= self.count else ""
        self._say(f"{self.count}{of}", item, outcome)

    def again(self, item: str, outcome: str) -> None:
        """An item already counted was run once more (alone, after the others)."""
        self._say("run again alone", item, outcome)

    def _say(self, where: str, item: str, outcome: str) -> None:
        if self.quiet:
            return
        if self._live is not None:
            self._live.update(self._task, completed=self.count,
                              total=max(self.total, self.count),
                              last=rich_text(f"{item}: {outcome}"))
            return
        try:
            self.stream.write(f"mcp-tether {self.what}: {where} after {self.elapsed:.0f} s: "
                              f"{terminal(f'{item}: {outcome}')}\n")
            self.stream.flush()
        except (OSError, ValueError):  # a closed stderr never stops the work
            pass

    def per_index(self, names: list[str], *, expected: bool = False
                  ) -> Callable[[int, Mapping[str, object]], None]:
        """The `on_result(i, record)` callback of the probe's runner that reports item
        `names[i]` with the record's verdict; `names` are expected now unless `expected`
        (the caller counted them already)."""
        if not expected:
            self.expect(len(names))

        def tell(i: int, record: Mapping[str, object]) -> None:
            verdict = str(record.get("verdict") or "?")
            if record.get("rerun"):  # counted already: its second run, alone
                self.again(names[i], verdict)
            else:
                self.done(names[i], verdict)

        return tell

    def _start_live(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as Live

        console = Console(file=self.stream, force_terminal=True)
        self._live = Live(
            TextColumn(f"mcp-tether {self.what}"), BarColumn(bar_width=20),
            MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[last]}"),
            console=console, redirect_stdout=False, redirect_stderr=True,
            refresh_per_second=4,
        )
        self._task = self._live.add_task(self.what, total=self.total or None, last="")
        self._live.start()
