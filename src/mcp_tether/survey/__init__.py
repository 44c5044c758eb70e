"""The survey: many packaged servers, each probed as hosts launch it, in one table.

    from mcp_tether.survey import parse_list, run_survey
    result = run_survey(parse_list("docs/survey.list"), jobs=2)
    [(r.label, r.version, r.spec_pass, r.robust_pass, r.guard_pass) for r in result.rows]

For every entry: install it (`packages.prepare`, the host's launch form), read its SDK
(`inspect`), then three probes, each the `probe` command in a process of its own with
every scenario: the node host style, the python host style, and the node style behind
`mcp-tether run` (the guard). A row says spec/robust pass per host style, each failure's
diagnosis and remedy, and whether the guard makes it pass.

Guarantees:
- Entries run in parallel, `jobs` at once (default: the CPU count); each probe has a time
  limit, after which its probe process is sent SIGTERM (it ends its keepers and their
  trees) and, 30 s later, SIGKILL; only our own unreaped children are signalled.
- A failure is published only when it repeats (`repeat`): each failing scenario of a
  host style is probed twice more, the load average taken before every run; a cell that
  passes once is `flaky` (in `ServerResult.flaky`, with its runs), never a FAIL, and the levels
  are judged on the failures that repeat. A survey whose load stayed above the CPU
  count says so (`SurveyResult.busy`).
- A server that does not start is not a leak: when no scenario got through the
  handshake, the row is `did-not-start`, or `needs-service` when the entry declares
  `needs=` or the server's stderr says it could not reach something (connection
  refused, unknown host, a missing key).
- `should_stop()` true (SIGTERM/SIGINT in the CLI): no new probe starts, running ones
  are stopped as above, and `run_survey` returns only once every child is reaped. The
  CLI also runs the whole survey in a pid namespace where one can be made (proc.pidns).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, cast

from mcp_tether.inspect import inspect_path, server_uses
from mcp_tether.packages import InstallPolicy, PackageError, Prepared, prepare
from mcp_tether.proc.pidns import in_pid_namespace
from mcp_tether.survey.listfile import Entry, parse_line, parse_list
from mcp_tether.survey.loadshare import OthersLoad
from mcp_tether.survey.repeat import (
    REPEATS,
    Run,
    busy,
    busy_others,
    failed_verdict,
    judge,
    repeat_failing,
)

if TYPE_CHECKING:
    from mcp_tether.probe.record import ProbeDocument, ScenarioRecord
    from mcp_tether.survey.records import RunRow, SurveyRow

__all__ = ["run_survey", "rerun", "ServerResult", "SurveyResult", "Entry", "parse_list",
           "parse_line", "PROBE_TIMEOUT", "PROBE_FLOOR", "STYLES"]

PROBE_TIMEOUT = 240.0  # seconds for one probe run (every scenario of one host style)
# npx/uvx start-ups on a loaded machine take far longer than one local server: a
# scenario that cannot get its handshake is an error (unknown), never a verdict.
READY_TIMEOUT = 30.0
# One probe's shortest run: start-up, the 2 s window, the horizon and the 3 s idle
# scenario, all scenarios of a host style at once (measured: 13-16 s on a quiet machine).
PROBE_FLOOR = 15.0
STOP_GRACE = 30.0  # after SIGTERM, a probe ends its keepers' trees within this
STYLES = ("node", "python", "guarded")  # the guarded run uses the node host style
_SERVICE = re.compile(
    r"ECONNREFUSED|connection refused|could not connect|cannot connect|failed to connect|"
    r"ENOTFOUND|getaddrinfo|name or service not known|EAI_AGAIN|unreachable|"
    r"(api[_ ]?key|token|credential|secret)s?\b.{0,40}\b(required|missing|not set|invalid)|"
    r"\b(required|missing)\b.{0,40}\b(api[_ ]?key|token|credentials?|environment variable)",
    re.I)


@dataclass
class Failure:
    style: str
    scenario: str
    level: str
    verdict: str
    diagnosis: str
    remedy: str
    # Every run of the cell (`repeat.Run` as dicts: verdict, passed, load), the first
    # included, and what they say (`repeat.judge`); "" and [] in surveys made before.
    repeated: str = ""
    runs: list[RunRow] = field(default_factory=list)
    # What an independent SDK host said of this failure (bench/sdk_recheck.py
    # --annotate): "confirmed (...)" or "not confirmed: ..."; "" not re-checked.
    sdk_recheck: str = ""

    def judged(self) -> str:
        """`repeats` / `flaky` / `unrepeated` by the one rule (`repeat.judge`) on its
        runs; a failure saved without runs (a survey before repeats) stays as it was."""
        return judge(self._runs()) if self.runs else (self.repeated or "repeats")

    @property
    def failed_verdict(self) -> str:
        """The word of its FAIL cell (`repeat.failed_verdict`)."""
        return failed_verdict(self._runs(), self.verdict)

    def _runs(self) -> list[Run]:
        return [Run.from_dict(r) for r in self.runs]


@dataclass
class ServerResult:
    """One server's row of the survey: what was installed and launched, what its entry
    point loads, and how each host style fared (passes, verdicts, failures that repeat,
    flaky cells, the load before each probe run)."""

    label: str
    spec: str
    name: str = ""
    version: str = ""
    language: str = ""
    sdk: str = ""  # "@modelcontextprotocol/sdk 1.32.2": what its entry point loads ("" none)
    sdk_exits_on_eof: bool | None = None
    launch: str = ""
    command: list[str] = field(default_factory=list)
    needs: str | None = None  # the list's needs=
    downloads: int | None = None  # the list's downloads= (npm, a month)
    rank: int | None = None  # the list's rank= (PyPI)
    status: str = "ok"  # ok | install-failed | no-command | did-not-start | needs-service
    #                     | timeout | stopped | error
    note: str = ""
    spec_pass: dict[str, bool | None] = field(default_factory=dict)  # per style
    robust_pass: dict[str, bool | None] = field(default_factory=dict)
    verdicts: dict[str, dict[str, str]] = field(default_factory=dict)  # style -> scen -> v
    failures: list[Failure] = field(default_factory=list)  # the ones that repeat
    flaky: list[Failure] = field(default_factory=list)  # failed, then passed (or not rerun)
    loads: dict[str, float] = field(default_factory=dict)  # style -> load before its probe
    seconds: float = 0.0
    install_scripts: list[str] = field(default_factory=list)  # packages of its tree with one
    scripts_ran: bool = False  # surveyed with --allow-scripts

    @property
    def guard_pass(self) -> bool | None:
        return self.robust_pass.get("guarded")

    @property
    def has_results(self) -> bool:
        """Does the table show its verdicts (it started, and was probed)?"""
        return self.status in ("ok", "timeout") and bool(self.spec_pass)

    @property
    def first_runs(self) -> int:
        """Its probe runs before any repeat: one per style whose load was taken (a row
        saved before loads were kept: every style, once it was installed)."""
        if self.loads:
            return len(self.loads)
        return 0 if self.status in ("install-failed", "no-command") else len(STYLES)

    def to_dict(self) -> SurveyRow:
        d = asdict(self)
        d["guard_pass"] = self.guard_pass
        return cast("SurveyRow", d)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ServerResult:
        """A saved row, judged again by today's rule (`rejudge`): every rendering of a
        saved survey words its cells as a new one would."""
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        known.setdefault("spec", str(d.get("label", "")))  # a row derived by hand
        known["failures"] = [Failure(**f) for f in d.get("failures") or []]
        known["flaky"] = [Failure(**f) for f in d.get("flaky") or []]
        row = cls(**known)
        row.rejudge()
        return row

    def rejudge(self) -> None:
        """Every failure with runs judged by `repeat.judge`: a FAIL when it repeats, else
        flaky (or unrepeated); then each style's levels again on what repeats."""
        cells = [*self.failures, *self.flaky]
        changed = set()
        for f in cells:
            was, f.repeated = f.repeated, f.judged() if f.runs else f.repeated
            if f.repeated != was:
                changed.add(f.style)
        self.failures = [f for f in cells if f.repeated not in ("flaky", "unrepeated")]
        self.flaky = [f for f in cells if f.repeated in ("flaky", "unrepeated")]
        for style in sorted(changed):  # a style whose cells all kept their word keeps its levels
            self.judge_levels(style)

    def judge_levels(self, style: str, levels: dict[str, str | None] | None = None) -> None:
        """The style's spec and robust passes over every verdict it has, judged on the
        failures that repeat (an unrepeated one is unknown); `levels`: each scenario's
        level, where the probe said it."""
        from mcp_tether.probe.scenarios import SCENARIOS
        from mcp_tether.probe.scenarios import get as get_scenario

        failed = {f.scenario for f in self.failures if f.style == style}
        unrepeated = {f.scenario for f in self.flaky
                      if f.style == style and f.repeated == "unrepeated"}
        cells = {f.scenario: f for f in (*self.failures, *self.flaky) if f.style == style}
        levels = {**{s: f.level for s, f in cells.items()}, **(levels or {})}
        verdicts = {**{s: f.verdict for s, f in cells.items()}, **self.verdicts.get(style, {})}
        judged = [{"scenario": s, "passed": s not in failed,
                   "level": levels.get(s) or (get_scenario(s).level if s in SCENARIOS
                                              else "robust"),
                   "verdict": "error" if s in unrepeated else v}
                  for s, v in verdicts.items()]
        if not judged:
            return
        self.spec_pass[style] = _level_pass(judged, "spec")
        self.robust_pass[style] = _level_pass(judged, "robust")

    def judged(self, style: str, scenario: str) -> str | None:
        """The cell's word by the one rule: its verdict when it passed, the failing
        runs' verdict when it is a FAIL (`Failure.failed_verdict`), `flaky` or
        `unrepeated` when it did not repeat; None: not probed."""
        for f in self.failures:
            if (f.style, f.scenario) == (style, scenario):
                return f.failed_verdict
        for f in self.flaky:
            if (f.style, f.scenario) == (style, scenario):
                return f.repeated
        return self.verdicts.get(style, {}).get(scenario)

    def cell(self, style: str, scenario: str) -> Failure | None:
        """The failure (FAIL or not repeated) of this cell, with its runs; None: none."""
        return next((f for f in (*self.failures, *self.flaky)
                     if (f.style, f.scenario) == (style, scenario)), None)

    def reclassify(self) -> None:
        """A row whose every style ran but whose server never got past the handshake
        (only `devnull` passed, which needs none) did not start: say so, and why."""
        if self.status != "ok" or not self.verdicts or any(
                started(v) for v in self.verdicts.values()):
            return
        self.not_started("\n".join(f.diagnosis for f in self.failures))

    def not_started(self, text: str, *, last: bool = False) -> None:
        """The server never got past the handshake: `needs-service` when the entry
        declares needs= or `text` (its stderr, or its failures' diagnoses) says it could
        not reach something, else `did-not-start`; the note quotes the line that says so
        (the first such line of `text`, or the last)."""
        if self.needs or _SERVICE.search(text):
            what = f"needs {self.needs}" if self.needs else "needs a service"
            self.status = "needs-service"
            self.note = f"{what} it cannot reach here: {_first_line(text, _SERVICE, last)}"
        else:
            self.status = "did-not-start"
            self.note = _first_line(text, last=last) or "no answer to initialize"


@dataclass
class SurveyResult:
    rows: list[ServerResult]
    started: float
    seconds: float
    jobs: int
    pid_namespace: bool
    # The 1-minute load average when the survey started and when it ended: a survey made
    # on a busy machine times out handshakes and runs long, and its table should say so.
    load: tuple[float, float] | None = None
    # A table put together from several surveys (`merge`): each one's own header facts.
    runs: list[dict[str, Any]] = field(default_factory=list)
    cpus: int = field(default_factory=lambda: os.cpu_count() or 1)
    # Runnable tasks that were not the survey's own (`loadshare`): median, max, samples;
    # None where the backend cannot count them (or a JSON from before they were kept).
    others: dict[str, Any] | None = None

    def loads(self) -> list[float]:
        """Every load average taken: at the start and end, before every probe run."""
        out = list(self.load or ())
        for row in self.rows:
            out += row.loads.values()
            out += [float(run["load"]) for f in (*row.failures, *row.flaky) for run in f.runs]
        return out

    def others_medians(self) -> list[float] | None:
        """The median of other work's runnable tasks, per survey put together (one for a
        single survey); None when a survey among them did not count it."""
        facts = [r.get("others_running") for r in self.runs] if self.runs else [self.others]
        if not facts or any(not f for f in facts):
            return None
        return [float(f["median"]) for f in facts if f]

    @property
    def busy(self) -> bool:
        """Did other work keep more tasks runnable than there are CPUs (the survey's own
        not counted)? Where that was not counted: did the load average, the survey's own
        probes included, stay above the CPU count? (Timings, then, are the machine's.)"""
        medians = self.others_medians()
        if medians is not None:
            return busy_others(medians, self.cpus)
        return busy(self.loads(), self.cpus)

    def statuses(self) -> dict[str, int]:
        """How many rows of each kind, as the table shows them: `results` (a row with its
        verdicts), then each status of a row without (did-not-start, needs-service...)."""
        out: dict[str, int] = {}
        for r in self.rows:
            key = "results" if r.has_results else r.status
            out[key] = out.get(key, 0) + 1
        return out

    @property
    def first_runs(self) -> int:
        """Probe runs of every style a row got to (one for a server that did not start:
        the other styles are not run), before any repeat."""
        return sum(r.first_runs for r in self.rows)

    @property
    def repeat_runs(self) -> int:
        """Probe runs that ran failures again: `REPEATS` for each host style of a row
        whose failures were run again."""
        return sum(REPEATS * len({f.style for f in (*r.failures, *r.flaky) if f.runs})
                   for r in self.rows)

    @property
    def probe_runs(self) -> int:
        return self.first_runs + self.repeat_runs

    @property
    def floor(self) -> float:
        """The run time it cannot beat: every probe run about one scenario long (all
        scenarios of a probe run at once), `jobs` at a time."""
        return self.probe_runs * PROBE_FLOOR / max(self.jobs, 1)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SurveyResult:
        started = time.mktime(time.strptime(d["started"], "%Y-%m-%dT%H:%M:%SZ")) - \
            time.timezone
        rows = d["results"] if "results" in d else d["rows"]  # "rows": before the envelope
        load = d.get("load_average")
        return cls([ServerResult.from_dict(r) for r in rows], started, float(d["seconds"]),
                   int(d["jobs"]), bool(d["pid_namespace"]),
                   (float(load["start"]), float(load["end"])) if load else None,
                   list(d.get("runs") or []), int(d.get("cpus") or os.cpu_count() or 1),
                   d.get("others_running"))

    def run_facts(self) -> dict[str, Any]:
        """This survey's own header facts (no rows), as `runs` keeps them."""
        d = self.to_dict()
        d.pop("rows")
        d.pop("runs", None)
        d.pop("busy", None)
        d.update(servers=len(self.rows), statuses=self.statuses())
        return d

    @classmethod
    def merge(cls, parts: list[SurveyResult], order: list[str]) -> SurveyResult:
        """One table from several surveys of one list: a row of a later part replaces the
        same server's row of an earlier one; rows in the list's order (`order`: labels).
        Each part's own facts (start, run time, load, floor) are kept in `runs`."""
        by_label: dict[str, ServerResult] = {}
        runs: list[dict[str, Any]] = []
        for part in parts:
            runs.extend(part.runs or [part.run_facts()])
            by_label.update((r.label, r) for r in part.rows)
        rank = {label: i for i, label in enumerate(order)}
        rows = sorted(by_label.values(), key=lambda r: rank.get(r.label, len(rank)))
        return cls(rows, parts[0].started, sum(float(r["seconds"]) for r in runs),
                   parts[-1].jobs, all(p.pid_namespace for p in parts), None, runs,
                   parts[-1].cpus)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
            "seconds": round(self.seconds, 1), "jobs": self.jobs,
            "pid_namespace": self.pid_namespace, "floor_seconds": round(self.floor, 1),
            "probe_runs": self.probe_runs, "first_runs": self.first_runs,
            "repeat_runs": self.repeat_runs,
            "cpus": self.cpus, "busy": self.busy}
        if self.load is not None:
            d["load_average"] = {"start": self.load[0], "end": self.load[1]}
        if self.others is not None:
            d["others_running"] = self.others
        if self.runs:
            d["runs"] = self.runs
        d["rows"] = [r.to_dict() for r in self.rows]
        return d


def _load() -> float:
    return round(os.getloadavg()[0], 2)


class _Children:
    """Our running probe processes, so a stop can end them (ours, unreaped: safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen[str]] = set()
        self.stopping = False

    def stop_all(self) -> None:
        with self.lock:
            self.stopping = True
            for p in self.running:
                if p.returncode is None:
                    p.terminate()  # an unreaped child of ours: its pid cannot be reused


def _probe_argv(style: str, entry: Entry, argv: list[str], jobs: int | None,
                ready_timeout: float, scenarios: tuple[str, ...] = ()) -> list[str]:
    out = [sys.executable, "-m", "mcp_tether", "probe", "--json", "--level", "robust",
           "--host-style", "node" if style == "guarded" else style,
           "--ready-timeout", f"{ready_timeout:g}"]
    for k, v in entry.env.items():
        out += ["--env", f"{k}={v}"]
    if entry.call:
        out += ["--call", entry.call[0], json.dumps(entry.call[1])]
    if jobs:
        out += ["--jobs", str(jobs)]
    for name in scenarios:
        out += ["-s", name]
    if style == "guarded":
        argv = [sys.executable, "-m", "mcp_tether", "run", "--", *argv]
    return out + ["--", *argv]


def _run_probe(argv: list[str], cwd: str | None, timeout: float,
               kids: _Children) -> tuple[str, ProbeDocument | None, str]:
    """(outcome, payload, stderr tail); outcome ok | timeout | stopped | error."""
    with kids.lock:
        if kids.stopping:
            return "stopped", None, ""
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=cwd)
        kids.running.add(p)
    outcome = "ok"
    try:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            outcome = "timeout"
            p.terminate()
            try:
                out, err = p.communicate(timeout=STOP_GRACE)
            except subprocess.TimeoutExpired:
                p.kill()
                out, err = p.communicate()
    finally:
        with kids.lock:
            kids.running.discard(p)
    if kids.stopping and outcome == "ok" and p.returncode and p.returncode >= 128:
        outcome = "stopped"
    tail = "\n".join(err.strip().splitlines()[-3:])
    try:
        payload = json.loads(out) if out.strip() else None
    except ValueError:
        payload = None
    if outcome == "ok" and not isinstance(payload, dict):
        outcome = "error"
    # the probe's own document, read back: its keys are `ProbeDocument`'s
    return outcome, cast("ProbeDocument", payload) if isinstance(payload, dict) else None, tail


def _level_pass(results: Sequence[Mapping[str, Any]], level: str) -> bool | None:
    """False when a scenario of the level failed; None (unknown) when none failed but
    one could not run (verdict error); True when all passed."""
    counted = [r for r in results if level == "robust" or r.get("level") == "spec"]
    if any(not r.get("passed") and r.get("verdict") != "error" for r in counted):
        return False
    if not counted or any(r.get("verdict") == "error" for r in counted):
        return None
    return True


# Scenarios judged without a handshake: their verdict says nothing about start-up.
NO_HANDSHAKE = ("devnull",)


def started(verdicts: dict[str, str]) -> bool:
    """Did any scenario get past the handshake? (error/early-exit everywhere: no.)"""
    return any(v not in ("error", "early-exit") for s, v in verdicts.items()
               if s not in NO_HANDSHAKE)


def _started(results: list[ScenarioRecord]) -> bool:
    return started({r["scenario"]: r.get("verdict", "error") for r in results})


def _stderr(results: list[ScenarioRecord]) -> str:
    for r in results:
        tail = (r.get("stderr_tail") or "").strip()
        if tail:
            return tail
    return "\n".join(r.get("detail") or "" for r in results[:1])


def _first_line(text: str, pattern: re.Pattern[str] | None = None, last: bool = False) -> str:
    """The first (or last) line of `text`, preferring lines that match `pattern`."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    if pattern is not None:
        lines = [ln for ln in lines if pattern.search(ln)] or lines
    return ((lines[-1] if last else lines[0]) if lines else "")[:200]


def _results(run: tuple[str, ProbeDocument | None, str]) -> list[ScenarioRecord] | None:
    """A probe run's scenario results, or None when the probe itself did not finish."""
    outcome, payload, _ = run
    return payload.get("results") or [] if outcome == "ok" and payload is not None else None


def record(row: ServerResult, style: str, results: list[ScenarioRecord],
           cells: dict[str, list[Run]]) -> None:
    """One style's probe results into `row`, in place of what it had for those scenarios:
    verdicts, failures judged on their runs (`cells`: scenario -> runs, from
    `repeat.repeat_failing`), and the style's level passes over every verdict it has."""
    names = {r["scenario"] for r in results}
    row.verdicts.setdefault(style, {}).update({r["scenario"]: r["verdict"] for r in results})
    keep = [f for f in row.failures if not (f.style == style and f.scenario in names)]
    row.flaky = [f for f in row.flaky if not (f.style == style and f.scenario in names)]
    row.failures = keep
    for r in results:
        if r.get("passed"):
            continue
        why = r.get("diagnosis") or r.get("detail") or ""
        if r["verdict"] == "error" and not r.get("diagnosis"):
            why = f"could not run the scenario: {r.get('detail') or '?'}"
        f = Failure(style, r["scenario"], r.get("level") or "spec", r["verdict"], why,
                    r.get("remedy") or "")
        runs = cells.get(f.scenario)
        if runs:
            f.runs, f.repeated = [run.to_dict() for run in runs], judge(runs)
        (row.flaky if f.repeated in ("flaky", "unrepeated") else row.failures).append(f)
    row.judge_levels(style, {r["scenario"]: r.get("level") for r in results})


def survey_one(entry: Entry, kids: _Children, *, timeout: float | None = None,
               jobs: int | None = None, ready_timeout: float = READY_TIMEOUT,
               scenarios: tuple[str, ...] = (),
               policy: InstallPolicy | None = None) -> ServerResult:
    """One entry: install it, read its SDK, probe it in each host style (failures run
    again), then say whether it started at all."""
    t0 = time.monotonic()
    policy = policy or InstallPolicy()
    row = ServerResult(entry.label, entry.spec.text, launch=entry.launch or "",
                       needs=entry.needs, downloads=entry.downloads, rank=entry.rank,
                       scripts_ran=policy.scripts)
    got = _install(row, entry, policy)
    if got is None:
        row.seconds = time.monotonic() - t0
        return row
    _read_sdk(row, got)
    limit = entry.timeout or timeout or PROBE_TIMEOUT

    def probe(style: str, names: tuple[str, ...]) -> tuple[str, ProbeDocument | None, str]:
        return _run_probe(_probe_argv(style, entry, got.argv, jobs, ready_timeout, names),
                          got.cwd, limit, kids)

    for style in STYLES:
        if not _probe_style(row, style, scenarios, probe):
            break
    row.seconds = time.monotonic() - t0
    row.reclassify()
    if row.status == "did-not-start" and row.install_scripts and not policy.scripts:
        row.note += f" (install scripts not run: {', '.join(row.install_scripts)}; " \
            "--allow-scripts runs them)"
    return row


def _install(row: ServerResult, entry: Entry, policy: InstallPolicy) -> Prepared | None:
    """Install the entry as its host launches it, and note what came; None when there
    is nothing to probe (the row's status and note say why)."""
    try:
        got = prepare(entry.spec, bin=entry.bin, launch=entry.launch, args=entry.args,
                      policy=policy)
    except PackageError as exc:
        row.status = "no-command" if exc.exit_code == 126 else "install-failed"
        row.note = exc.msg
        return None
    except Exception as exc:  # a usage error in the list (several bins) is this row's
        row.status, row.note = "error", str(exc)
        return None
    row.name, row.version, row.language = got.name, got.version, got.language
    row.launch, row.command = got.launch, got.argv
    row.install_scripts = got.install_scripts
    return got


def _read_sdk(row: ServerResult, got: Prepared) -> None:
    """The one answer the probe's diagnosis gives too: what the launch command's entry
    point loads, resolved as the host's launcher resolves it (not the first SDK merely
    installed in the package's tree, which a diagnosis could then contradict)."""
    uses = server_uses(got.argv, got.cwd)
    if uses.package:
        row.sdk = uses.label() if uses.found else \
            f"{uses.package} {uses.version or '(version unknown)'}"
        row.sdk_exits_on_eof = uses.info.exits_on_eof if uses.info is not None else None
        if not uses.found:  # an SDK inspect does not know: named, not read
            row.sdk += " (not known to inspect: EOF behaviour unknown)"
    elif uses.state == "unknown":  # the entry point could not be read: what is installed
        try:
            sdks = inspect_path(got.dir)
        except Exception:  # inspect answers best effort; the probe is the evidence
            sdks = []
        if sdks and sdks[0].package:
            row.sdk = f"{sdks[0].package} {sdks[0].version} (installed; its use not read)"
            row.sdk_exits_on_eof = sdks[0].exits_on_eof


def _probe_style(
    row: ServerResult, style: str, scenarios: tuple[str, ...],
    probe: Callable[[str, tuple[str, ...]], tuple[str, ProbeDocument | None, str]],
) -> bool:
    """One host style's probe run into `row`, its failures run again (`repeat`); False
    when the other styles need not run (stopped, or the server did not start)."""
    row.loads[style] = _load()
    outcome, payload, tail = probe(style, scenarios)
    if outcome != "ok" or payload is None:
        row.status = outcome
        row.note = row.note or f"{style}: {outcome}" + (f": {_first_line(tail, last=True)}"
                                                       if tail else "")
        return outcome != "stopped"
    results = payload.get("results") or []
    if not _started(results):
        row.not_started(_stderr(results), last=True)
        return False  # the other styles would say the same

    def again(names: tuple[str, ...]) -> list[ScenarioRecord] | None:
        return _results(probe(style, names))

    record(row, style, results, repeat_failing(results, row.loads[style], again, _load))
    return True


def _stop(kids: _Children, pending: dict[Future[ServerResult], int]) -> None:
    kids.stop_all()
    for f in pending:
        f.cancel()


def run_survey(entries: list[Entry], *, jobs: int | None = None, timeout: float | None = None,
               scenario_jobs: int | None = None, ready_timeout: float = READY_TIMEOUT,
               scenarios: tuple[str, ...] = (),
               should_stop: Callable[[], bool] = lambda: False,
               on_row: Callable[[ServerResult], None] | None = None,
               policy: InstallPolicy | None = None) -> SurveyResult:
    """Probe every entry; rows in list order. Returns once every child is reaped; when
    stopped (should_stop, Ctrl-C), with the rows done and the others `stopped`."""
    jobs = jobs or os.cpu_count() or 2
    kids = _Children()
    started, t0, load_start = time.time(), time.monotonic(), _load()
    rows: dict[int, ServerResult] = {}
    with OthersLoad() as others, ThreadPoolExecutor(max_workers=jobs) as pool:
        pending: dict[Future[ServerResult], int] = {
            pool.submit(survey_one, e, kids, timeout=timeout, jobs=scenario_jobs,
                        ready_timeout=ready_timeout, scenarios=scenarios, policy=policy): i
            for i, e in enumerate(entries)}
        futures = dict(pending)
        try:
            while pending:
                if should_stop() and not kids.stopping:
                    _stop(kids, pending)
                done, _ = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for f in done:
                    i = pending.pop(f)
                    if not f.cancelled():
                        rows[i] = f.result()
                        if on_row is not None:
                            on_row(rows[i])
        except KeyboardInterrupt:  # Ctrl-C: stop like SIGTERM, keep the rows done
            _stop(kids, pending)
        except BaseException:
            _stop(kids, pending)
            raise
    # The pool is shut down: every worker returned, every probe process is reaped.
    for f, i in futures.items():
        if i not in rows and f.done() and not f.cancelled() and f.exception() is None:
            rows[i] = f.result()
    for i, e in enumerate(entries):
        if i not in rows:
            rows[i] = ServerResult(e.label, e.spec.text, status="stopped", note="not run: stopped")
    return SurveyResult([rows[i] for i in range(len(entries))], started,
                        time.monotonic() - t0, jobs, in_pid_namespace(),
                        (load_start, _load()), others=others.summary())


def rerun(result: SurveyResult, entries: list[Entry], style: str,
          scenarios: tuple[str, ...], *, jobs: int | None = None,
          ready_timeout: float = READY_TIMEOUT, only: tuple[str, ...] = (),
          on_row: Callable[[ServerResult], None] | None = None) -> SurveyResult:
    """Probe `scenarios` again in one host `style` for every probed row of `result`,
    and put the new verdicts (and failures, and the style's level passes) in place of
    the old: for when one style's scenario changed and a whole survey is not needed.
    Rows are matched to `entries` by label (`only`: just those whose label contains
    one of these); a row without its entry is kept as it was, and so is a scenario that
    ends `error` or `early-exit` this time. A failure is run again as in a survey
    (`repeat`): only one that repeats stays a failure.
    """
    by_label = {e.label: e for e in entries}
    todo = [r for r in result.rows if r.status == "ok" and style in r.verdicts
            and r.label in by_label and (not only or any(t in r.label for t in only))]
    kids = _Children()

    def one(row: ServerResult) -> ServerResult:
        entry = by_label[row.label]
        try:
            got = prepare(entry.spec, bin=entry.bin, launch=entry.launch, args=entry.args)
        except PackageError:
            return row  # installed for the first run, not now: keep what it measured

        def probe(names: tuple[str, ...]) -> list[ScenarioRecord] | None:
            return _results(_run_probe(
                _probe_argv(style, entry, got.argv, None, ready_timeout, names), got.cwd,
                entry.timeout or PROBE_TIMEOUT, kids))

        load = _load()
        results = probe(scenarios)
        if results is None:
            return row
        # A scenario that could not run again (no handshake under load, a start-up
        # failure) keeps what the first run measured, rather than an unknown.
        results = [r for r in results if r.get("verdict") not in ("error", "early-exit")]
        row.loads[style] = load
        record(row, style, results, repeat_failing(results, load, probe, _load))
        if on_row is not None:
            on_row(row)
        return row

    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 2) as pool:
        list(pool.map(one, todo))
    return result  # its rows changed in place; its run time stays the original run's
