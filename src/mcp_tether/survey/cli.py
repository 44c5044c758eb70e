"""`mcp-tether survey LIST`: probe every packaged server of a list file; one table."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

from mcp_tether.cliprogress import Progress, add_quiet
from mcp_tether.cliutil import positive_duration, teach
from mcp_tether.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, ConfigError, UsageError
from mcp_tether.packages import check_cache, policy_summary
from mcp_tether.packages.options import add_policy_options, policy_from
from mcp_tether.probe.runner import StopSignals
from mcp_tether.proc.pidns import in_pid_namespace, run_in_pid_namespace
from mcp_tether.survey import ServerResult, SurveyResult, parse_list, run_survey
from mcp_tether.survey.render import busy_text, to_html, to_json, to_markdown

EPILOG = """\
LIST: one server a line (# comments; words split like a shell's):
  SPEC [launch=npx|uvx|direct] [bin=NAME] [env=KEY=VALUE]... [call=TOOL:JSON]
       [needs=SERVICE] [name=LABEL] [timeout=SECONDS] [downloads=N] [rank=N]
       [-- SERVER ARGS...]
  SPEC is npm:NAME[@VERSION] or pypi:NAME[==VERSION] (as for `probe`); env= gives dummy
  keys; call= adds the busy-state scenario; needs= names a service the server wants, so
  that not starting without it reads "needs SERVICE", not a failure; downloads= (npm, a
  month) and rank= (PyPI) say how much it is used (the table's "used" column).
each server: installed into the package cache (npm --ignore-scripts unless
  --allow-scripts, pip wheels only unless --allow-build), launched as the host would
  (npx/uvx by default), as you, its SDK read (`inspect`), then probed with every
  scenario three times: the node host style, the python host style, and behind
  `mcp-tether run`. A row gives spec
  and robust pass per host style, each failure's diagnosis and remedy, and whether the
  guard makes it pass. Servers that did not start (or need a service they cannot reach
  here) are reported as such, not as leaks.
the survey runs in a pid namespace of its own where one can be made (root or user
  namespaces): when it ends, or is interrupted or killed, nothing it started is left.
a failure is published only when it repeats: each failing scenario is probed twice
  more (the load average recorded before every run); one that passes once is shown as
  `flaky` with its runs, never as FAIL. A survey during which other work (the survey's
  own tasks not counted: its probes alone load the machine) kept more tasks runnable than
  there are CPUs marks its table BUSY MACHINE, and --out then writes only BASE.json
  (--allow-busy: all).
exit code: 0 every row ran (whatever its verdicts: the survey reports, it does not
  judge), 1 some row could not be probed (install failed, error, timeout) or a busy
  survey's table was not written, 2 usage error
"""


EXAMPLES = (
    "mcp-tether survey docs/survey.list --out survey   # survey.md, survey.json, survey.html",
    "mcp-tether survey my-servers.list --jobs 1 --json",
    "mcp-tether survey docs/survey.list --only memory -s close -s crash   # a quick subset",
)
WORDS = """\
A row is one server of the list, probed three ways: the node host style, the python
host style, and behind the guard (`mcp-tether run`). spec / robust pass: every scenario
of that level passed (what the levels, scenarios and verdicts mean: `mcp-tether probe
--help`)."""


def configure(parser: argparse.ArgumentParser, name: str) -> None:
    teach(parser, EXAMPLES, WORDS, usage="mcp-tether survey LIST [--out BASE] [--json] "
          "[options]")
    parser.epilog = EPILOG + "\n" + (parser.epilog or "")
    parser.add_argument("list", help="the list file")
    out = parser.add_argument_group("output (a Markdown table on stdout by default)")
    out.add_argument("--out", metavar="BASE",
                     help="write BASE.md, BASE.json and BASE.html (the table, the "
                     "diagnoses and remedies)")
    out.add_argument("--json", action="store_true",
                     help="one JSON document instead of Markdown (docs/json.md)")
    out.add_argument("--from-json", metavar="FILE", action="append",
                     help="render a survey's JSON again (with --out), probing nothing; "
                     "repeated: one table from several surveys of the list, a later "
                     "file's row replacing an earlier one's")
    out.add_argument("--allow-busy", action="store_true",
                     help="write --out's table even when other work kept the machine busy "
                     "(without it, only BASE.json is written)")
    which = parser.add_argument_group("what to probe, and how")
    which.add_argument("-s", "--scenario", action="append", metavar="NAME", dest="scenarios",
                       help="probe only this scenario (repeatable; default: every one)")
    which.add_argument("--only", action="append", metavar="TEXT",
                       help="survey only the entries whose spec or name contains TEXT")
    which.add_argument("--jobs", type=int, default=None,
                       help="servers at once (default: the CPU count)")
    which.add_argument("--scenario-jobs", type=int, default=None,
                       help="scenarios at once within one server's probe (default: all)")
    which.add_argument("--timeout", type=positive_duration, default=None,
                       help="seconds for each probe run of one server (240)")
    which.add_argument("--ready-timeout", type=positive_duration, default=30.0,
                       help="seconds each scenario waits for the handshake (30: npx and "
                       "uvx start slowly on a busy machine)")
    which.add_argument("--host-namespace", action="store_true",
                       help="do not enter a pid namespace of its own")
    add_policy_options(parser.add_argument_group("installing the packages"))
    add_quiet(parser)


def command(args: argparse.Namespace) -> int:
    if args.from_json:
        return _rerender(args)
    entries = parse_list(args.list)
    if args.only:
        entries = [e for e in entries if any(t in e.spec.text or t in (e.name or "")
                                             for t in args.only)]
        if not entries:
            raise UsageError(f"--only {' '.join(args.only)}: no entry of {args.list} matches")
    for opt in ("jobs", "scenario_jobs"):
        if getattr(args, opt) is not None and getattr(args, opt) < 1:
            raise UsageError(f"--{opt.replace('_', '-')} must be at least 1")
    if args.out:
        _check_out(args.out)  # before an hour of probing, not after it
    policy = policy_from(args)
    check_cache([e.spec.ecosystem for e in entries], policy)  # a bad cache: one line, exit 2
    if not args.host_namespace and not in_pid_namespace() and _is_entry():
        status = run_in_pid_namespace([sys.executable, "-m", "mcp_tether", "survey",
                                       *sys.argv[2:]])
        if status is not None:
            return status
        print("mcp-tether survey: no pid namespace here (unshare not permitted); servers "
              "run in the host's", file=sys.stderr)

    def tell(row: ServerResult) -> None:
        progress.done(row.label, f"{row.status} in {row.seconds:.0f} s")

    print(f"mcp-tether survey: {policy_summary(policy)}", file=sys.stderr)
    with StopSignals("survey") as stop, \
            Progress("survey", total=len(entries), quiet=args.quiet) as progress:
        result = run_survey(entries, jobs=args.jobs, timeout=args.timeout,
                            scenario_jobs=args.scenario_jobs,
                            ready_timeout=args.ready_timeout,
                            scenarios=tuple(args.scenarios or ()), should_stop=stop,
                            on_row=tell, policy=policy)
    code = _write(args, result)  # also when stopped: the rows done so far, the rest "stopped"
    if stop.signum:
        return 128 + stop.signum
    print(f"mcp-tether survey: {len(result.rows)} servers in {result.seconds:.0f} s",
          file=sys.stderr)
    bad = [r for r in result.rows if r.status in ("install-failed", "error", "timeout")]
    return code or (EXIT_FAILED if bad else EXIT_OK)


def _rerender(args: argparse.Namespace) -> int:
    """The table again from a survey's JSON; the list supplies each row's needs=,
    downloads= and rank= where the JSON has none."""
    parts = []
    for path in args.from_json:
        try:
            parts.append(SurveyResult.from_dict(json.loads(Path(path).read_text())))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ConfigError(path, f"not a survey's JSON: {exc}") from None
    entries = parse_list(args.list)
    result = parts[0] if len(parts) == 1 else \
        SurveyResult.merge(parts, [e.label for e in entries])
    listed = {e.label: e for e in entries}
    for row in result.rows:
        entry = listed.get(row.label)
        if entry is not None:  # what the list says of the server, for older JSON too
            row.needs = row.needs or entry.needs
            row.downloads = row.downloads if row.downloads is not None else entry.downloads
            row.rank = row.rank if row.rank is not None else entry.rank
        row.reclassify()
    if args.out:
        _check_out(args.out)
    return _write(args, result) or EXIT_OK


def _check_out(base: str) -> None:
    """--out's folder is made, and must be writable; else one line, exit 2."""
    folder = Path(base).parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--out {base}: cannot make its folder ({exc.strerror})") from None
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"--out {base}: its folder {folder} is not writable")


def _write(args: argparse.Namespace, result: SurveyResult) -> int | None:
    """The table on stdout first (it is never lost to a file that fails), then --out's
    three files; a file that cannot be written is one line and exit 2."""
    sys.stdout.write(to_json(result) if args.json else to_markdown(result))
    sys.stdout.flush()
    code = None
    files: tuple[tuple[str, Callable[[SurveyResult], str]], ...] = (
        (("md", to_markdown), ("json", to_json), ("html", to_html)) if args.out else ())
    if files and result.busy and not args.allow_busy:
        # The data is kept (`--from-json` renders it again); the table is not published.
        print(f"mcp-tether survey: {busy_text(result)}: "
              f"only {args.out}.json written (--allow-busy writes the table too)",
              file=sys.stderr)
        files, code = (("json", to_json),), EXIT_FAILED
    for ext, render in files:
        path = f"{args.out}.{ext}"
        try:
            Path(path).write_text(render(result))
        except OSError as exc:
            print(f"mcp-tether survey: --out {path}: {exc.strerror or exc}", file=sys.stderr)
            code = EXIT_USAGE
    return code


def _is_entry() -> bool:
    """Re-executing only makes sense when this process is `mcp-tether survey ...` itself
    (not a test calling main(argv) in-process)."""
    return len(sys.argv) > 1 and sys.argv[1] == "survey" and \
        os.path.basename(sys.argv[0]) in ("mcp-tether", "__main__.py")
