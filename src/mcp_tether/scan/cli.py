"""`mcp-tether ps` and `mcp-tether reap`: a thin adapter over `scan`, `reap` and `watch`.

Parses argv, calls the API, renders.
Nothing is ended without a yes: a prompt on a TTY that lists each candidate with its
evidence and states the minimum age, else `--yes`; without either (and without
`--dry-run`) `reap` refuses at once, in one line, with exit 2. Only the caller's own
processes unless root with `--all-users`. Durations must be finite and >= 0 (exit 2).
`reap --watch` ends on SIGTERM, SIGINT or SIGHUP between actions: the signals are only
recorded (`SignalInbox`), the loop looks at them between rounds, and the stop is one
line on stderr and exit 128+N. Nothing else stops it once it runs: a `--textfile` or a
samples file that cannot be written (a folder removed, a full or read-only disk) is one
stderr line per distinct error and a count in the next textfile written. A `--textfile`
whose folder does not exist when it starts is a usage error (exit 2), said before
anything is ended: at start-up that is a typo far more often than a disk's trouble.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from mcp_tether import __version__, ladder, platform
from mcp_tether.cliutil import positive_duration, teach
from mcp_tether.container import machine
from mcp_tether.errors import EXIT_FAILED, EXIT_OK, UsageError
from mcp_tether.escape import terminal
from mcp_tether.guard.result import signame
from mcp_tether.jsonout import print_json
from mcp_tether.proc.inbox import SignalInbox
from mcp_tether.scan import watch as watch_mod
from mcp_tether.scan.find import scan
from mcp_tether.scan.model import ScanResult
from mcp_tether.scan.reap import (
    ABANDONED_ENDS_NOTHING,
    ENDS_NOTHING,
    INCLUDE_CHOICES,
    REAP_MIN_AGE,
    SUPERSEDED_MIN_AGE,
    Pins,
    ReapOutcome,
    plan,
    reap_servers,
)
from mcp_tether.scan.render import (
    counted,
    print_plan,
    print_ps,
    render_openmetrics,
    size_text,
)
from mcp_tether.scan.textfile import missing_folder, write_textfile
from mcp_tether.scan.watch import WATCH_INTERVAL, WATCH_MIN_AGE, WriteErrors

__all__ = ["configure", "command"]

PS_FORMATS = ("text", "json", "openmetrics")

PS_EXAMPLES = (
    "mcp-tether ps                        # leaked first, each with its evidence",
    "mcp-tether ps --json                 # the same, one document (docs/json.md)",
    "mcp-tether ps --textfile /var/lib/prometheus/node-exporter/mcp_tether.prom",
)
STATE_WORDS = """\
states (the STATE column):
  leaked      its host is gone AND its stdio lost its client side, every far end of the
              pipes accounted for (the EVIDENCE column says how): nothing will ever read
              it again; `reap` ends these
  superseded  an older copy of a server whose live host started a newer copy of the
              same server and stopped using the old one; never under a host that runs
              a copy per client (a measured habit, a listening socket, or seen using
              copies side by side); a line under the table says why a copy is not
  abandoned   its live host still holds its pipes but no longer reads them
  live        a running host uses it; never ended
  unknown     the evidence cannot tell (a far end the scan cannot see); never ended"""
REAP_EXAMPLES = (
    "mcp-tether reap --dry-run     # what would be ended and why; nothing is ended",
    "mcp-tether reap               # asks first on a terminal (--yes: do not ask)",
    "mcp-tether reap --watch --yes  # a janitor; --print-unit systemd: as a service",
)
REAP_WORDS = """\
reap ends leaked servers only (the states: `mcp-tether ps --help`), with --include also
other kinds; each tree is identified again by pid and start time right before each
signal: SIGTERM, --grace seconds, SIGKILL. Never one younger than --min-age, nor one
matching --allow, nor one `live` or `unknown`. --watch keeps at it, one line per action."""


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    if name == "ps":
        teach(parser, PS_EXAMPLES, STATE_WORDS)
    else:
        teach(parser, REAP_EXAMPLES, REAP_WORDS,
              usage="mcp-tether reap [--dry-run | --yes | --watch --yes] [options]")
    parser.add_argument("--json", action="store_true",
                        help="one JSON document on stdout (docs/json.md)")
    parser.add_argument("--config", metavar="FILE",
                        help="also match servers against this MCP config file")
    if name == "ps":
        parser.add_argument("--containers", action="store_true",
                            help="say why containers are not listed when no engine answers "
                                 "(said anyway where DOCKER_HOST or a daemon socket is set up)")
        parser.add_argument("--format", choices=PS_FORMATS, default=None,
                            help="output format (openmetrics: for a node exporter's "
                                 "textfile collector)")
        parser.add_argument("--textfile", metavar="PATH",
                            help="write the metrics to PATH instead of stdout, in the "
                            "Prometheus text format the textfile collector reads, "
                            "atomically (a temporary file in the same folder, then a "
                            "rename), for the textfile collector's folder (name it *.prom)")
        parser.add_argument("--per-process", action="store_true",
                            help="openmetrics: also one series per server tree (pid and "
                            "start labels; a new series for every process)")
        return
    parser.add_argument("--dry-run", action="store_true", help="show the plan, end nothing")
    parser.add_argument("-y", "--yes", action="store_true", help="do not ask")
    parser.add_argument("--include", action="append", default=[], choices=INCLUDE_CHOICES,
                        metavar="WHAT",
                        help="also end leaked processes not identified as MCP servers: "
                             "guess (named like one), stdio (any leaked stdio process); "
                             "superseded: old copies a live host replaced with a newer "
                             "copy it uses, once idle for --min-age (default "
                             f"{SUPERSEDED_MIN_AGE:g}s observed); abandoned: accepted, "
                             "ends nothing (a hint in ps only); repeatable")
    parser.add_argument("--grace", type=positive_duration, default=ladder.TERM_GRACE,
                        metavar="SECONDS",
                        help="between SIGTERM and SIGKILL (default %(default)s)")
    parser.add_argument("--min-age", type=positive_duration, default=None, metavar="SECONDS",
                        help=f"never end anything younger (default {REAP_MIN_AGE:g}; "
                             f"{WATCH_MIN_AGE:g} with --watch); a superseded copy: idle "
                             f"for less (default {SUPERSEDED_MIN_AGE:g})")
    parser.add_argument("--allow", action="append", default=[], metavar="PATTERN",
                        help="never end a server whose command, package or config name "
                             "matches this glob (shared servers); repeatable")
    parser.add_argument("--all-users", action="store_true",
                        help="(root only) also end other users' leaked servers")
    parser.add_argument("--watch", action="store_true",
                        help="keep running: end leaks as they appear, one line per action")
    parser.add_argument("--interval", type=positive_duration, default=None, metavar="SECONDS",
                        help="between scans in --watch mode (default 30)")
    parser.add_argument("--print-unit", choices=("systemd", "launchd"), default=None,
                        help="print a user service that runs `reap --watch` and exit")
    parser.add_argument("--textfile", metavar="PATH",
                        help="with --watch: after each round, write ps's metrics and "
                             "counters of the trees ended, the memory that freed and the "
                             "failed writes to PATH, atomically, for a node exporter's "
                             "textfile collector (name it *.prom; docs/fleet.md). Its "
                             "folder must exist at start; a write that fails later is "
                             "said once and counted, and reaping goes on")


def command(args: argparse.Namespace) -> int:
    if args.command_name == "ps":
        metrics = args.textfile or args.per_process
        fmt = args.format or ("json" if args.json else "openmetrics" if metrics else "text")
        if metrics and fmt != "openmetrics":
            raise UsageError(f"--textfile and --per-process go with --format openmetrics, "
                             f"not {fmt}")
        return _ps(args.config, fmt, textfile=args.textfile, per_process=args.per_process,
                   containers=args.containers)
    return _reap(args)


def _ps(config: str | None, fmt: str, *, textfile: str | None = None,
        per_process: bool = False, containers: bool = False) -> int:
    result = scan(config=config)
    _warn(result.config_errors)
    off, boxes = machine.listing() if fmt != "openmetrics" else (None, [])
    if fmt == "json":
        doc = result.to_dict()
        summary: dict[str, Any] = {k: v for k, v in doc.items() if k != "servers"}
        print_json("ps", doc["servers"], **summary, containers=machine.as_json(boxes),
                   container_support=off)
    elif fmt == "openmetrics":
        text = render_openmetrics(result, per_process=per_process, version=__version__,
                                  dialect="prometheus" if textfile else "openmetrics")
        if textfile:
            try:
                write_textfile(textfile, text)
            except OSError as exc:
                raise UsageError(f"--textfile {textfile}: {exc.strerror or exc}") from None
        else:
            sys.stdout.write(text)
    else:
        print_ps(result)
        machine.print_listing(off, boxes, asked=containers)
    return EXIT_OK


def _warn(errors: list[str]) -> None:
    for e in errors:
        print(f"mcp-tether: warning: {e}", file=sys.stderr)


def _unit_opts(args: argparse.Namespace) -> list[str]:
    opts: list[str] = []
    for flag, value in (("--interval", args.interval), ("--min-age", args.min_age)):
        if value is not None:
            opts += [flag, f"{value:g}"]
    for pat in args.allow:
        opts += ["--allow", pat]
    for inc in args.include:
        opts += ["--include", inc]
    if args.config:
        opts += ["--config", os.path.abspath(args.config)]
    if args.textfile:
        opts += ["--textfile", os.path.abspath(args.textfile)]
    return opts


def _reap(args: argparse.Namespace) -> int:
    if args.print_unit:
        sys.stdout.write(watch_mod.render_unit(args.print_unit, _unit_opts(args)))
        return EXIT_OK
    if args.interval is not None and not args.watch:
        raise UsageError("--interval needs --watch")
    if args.textfile and not args.watch:
        raise UsageError("--textfile needs --watch (`ps --textfile` writes the metrics once)")
    uid = platform.euid()
    root = uid == 0
    if args.all_users and not root:
        raise UsageError("--all-users needs root: other users' processes are theirs to end")
    users = None if args.all_users or uid is None else {uid}
    if args.watch:
        if args.json:
            raise UsageError("--watch prints one line per action as it happens, not a JSON "
                             "document: drop --json (see docs/json.md)")
        if not args.yes:
            raise UsageError("--watch ends processes unattended: pass --yes")
        if args.interval == 0:
            raise UsageError("--interval must be > 0")
        folder = missing_folder(args.textfile) if args.textfile else None
        if folder is not None:
            raise UsageError(f"--textfile {args.textfile}: no folder {folder} (create it, "
                             "or name the textfile collector's folder)")
        return _watch(args, users)
    if not (args.yes or args.dry_run or _terminal()):
        raise UsageError("no terminal to ask on and no --yes: refusing "
                         "(see the plan with --dry-run, then pass --yes)")
    _ends_nothing(args)
    min_age = args.min_age if args.min_age is not None else REAP_MIN_AGE
    result = scan(config=args.config, users=users)
    _warn(result.config_errors)
    p = plan(result, set(args.include), min_age, args.allow, _superseded_min_age(args))
    off, listed = machine.listing()
    machine.say_off(off)
    boxes, boxes_skipped = machine.plan(listed, min_age, args.allow)
    if args.dry_run or not (p.chosen or boxes):
        if args.json:
            print_json("reap-plan", [s.to_dict() for s in p.chosen],
                       dry_run=bool(args.dry_run),
                       not_selected=[sk.to_dict() for sk in p.skipped],
                       containers=machine.as_json(boxes))
        else:
            print_plan(p, containers=bool(boxes))
            machine.print_plan(boxes, boxes_skipped)
        return EXIT_OK
    with Pins(p.chosen) as pins:  # from identification to the last signal
        n = len(p.chosen) + len(boxes)
        if not args.yes:
            print_plan(p, to=sys.stderr, containers=bool(boxes))
            machine.print_plan(boxes, [], to=sys.stderr)
            kinds = [(k, word) for k, word in ((len(p.chosen), "server tree"),
                                               (len(boxes), "container")) if k]
            what = kinds[0][1] if n == 1 else " and ".join(counted(k, w) for k, w in kinds)
            try:
                answer = input(f"End {'this' if n == 1 else 'these'} {what} "
                               f"(minimum age {min_age:g}s, --min-age to change)? [y/N] ")
            except EOFError:
                answer = ""
            if answer.strip().lower() not in ("y", "yes"):
                print("nothing ended", file=sys.stderr)
                return EXIT_OK
        outcomes = reap_servers(p.chosen, args.grace, pins)
    ended_boxes = machine.end(boxes, args.grace)  # re-checked by id + start time each
    if args.json:
        print_json("reap", [o.to_dict() for o in outcomes], containers=ended_boxes,
                   not_selected=[sk.to_dict() for sk in p.skipped],
                   reclaimed_bytes=sum(o.reclaimed_bytes for o in outcomes))
    else:
        for o in outcomes:
            print(watch_mod.describe(o))
        ended = [o for o in outcomes if o.outcome == "ended"]
        print(f"ended {len(ended)} of {len(outcomes)}, reclaimed "
              f"{size_text(sum(o.reclaimed_bytes for o in outcomes))}")
        for b in ended_boxes:
            print(terminal(f"container {b['container']} {b['image']}: {b['outcome']}"))
    bad = [o for o in outcomes if o.outcome in ("survived", "denied")]
    bad_boxes = [b for b in ended_boxes if b["outcome"] in ("survived", "denied")]
    return EXIT_FAILED if bad or bad_boxes else EXIT_OK


def _superseded_min_age(args: argparse.Namespace) -> float:
    """--min-age for superseded copies: seconds of observed idleness."""
    return args.min_age if args.min_age is not None else SUPERSEDED_MIN_AGE


def _ends_nothing(args: argparse.Namespace) -> None:
    """One line, once, for an --include that is accepted but ends nothing any more."""
    if set(args.include) & ENDS_NOTHING:
        print(f"mcp-tether: {ABANDONED_ENDS_NOTHING}", file=sys.stderr)


def _terminal() -> bool:
    """Someone to ask: stdin and stderr both a terminal."""
    return sys.stdin is not None and sys.stdin.isatty() and sys.stderr.isatty()


def _watch(args: argparse.Namespace, users: set[int] | None) -> int:
    interval = args.interval if args.interval is not None else WATCH_INTERVAL
    _ends_nothing(args)
    errors = WriteErrors(lambda line: print(f"mcp-tether reap --watch: {line}", file=sys.stderr,
                                            flush=True))
    with SignalInbox((signal.SIGTERM, signal.SIGINT, signal.SIGHUP)) as inbox:
        # Said once the stop signals are ours: from this line on, a stop is clean.
        print(f"mcp-tether reap --watch: scanning every {interval:g}s", file=sys.stderr)
        received: list[int] = []

        def should_stop() -> bool:
            received.extend(inbox.drain())
            return bool(received)

        watch_mod.watch(interval=interval,
                        min_age=args.min_age if args.min_age is not None else WATCH_MIN_AGE,
                        allow=args.allow, include=set(args.include), grace=args.grace,
                        superseded_min_age=_superseded_min_age(args),
                        scan_kwargs={"config": args.config, "users": users},
                        emit=lambda line: print(line, flush=True), should_stop=should_stop,
                        errors=errors,
                        after_round=_metrics_writer(args.textfile, errors)
                        if args.textfile else None)
    if received:  # a stop between two scans or ladders: said once, 128+N like a shell
        print(f"mcp-tether reap --watch: stopped by {signame(received[0])}", file=sys.stderr)
        return 128 + received[0]
    return EXIT_OK


def _metrics_writer(path: str, errors: WriteErrors
                    ) -> Callable[[ScanResult, list[ReapOutcome]], None]:
    """After each round of `reap --watch`: the round's scan as `ps --textfile` writes it,
    with the counters since the watch started (a restart resets them, which `increase()`
    reads as a reset). A write that fails is counted in `errors` (and said once there):
    the next file written carries the count."""
    reaped: dict[str, int] = {}
    reclaimed = [0]

    def write(result: ScanResult, outcomes: list[ReapOutcome]) -> None:
        for o in outcomes:
            reaped[o.outcome] = reaped.get(o.outcome, 0) + 1
            reclaimed[0] += o.reclaimed_bytes
        text = render_openmetrics(result, version=__version__, reaped=reaped,
                                  reclaimed_bytes=reclaimed[0], write_errors=errors.counts,
                                  dialect="prometheus")
        try:
            write_textfile(path, text)
        except OSError as exc:
            errors.failed("textfile", path, exc)
    return write
