"""The probe's public API: options, typed results, and `probe()` itself.

    report = probe(["node", "server.js"], ProbeOptions(host_style="node"))
    report.passes("spec"), [r.verdict for r in report.results]

Each scenario runs in a keeper process of its own (see `keeper.py`), all in parallel.
A report passes at a level (`spec`: what the MCP specification asks; `robust`: what
real hosts need beyond it) when every scenario of that level and below passes.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, cast

from mcp_tether.errors import CommandNotExecutable, CommandNotFound, UsageError
from mcp_tether.guard.argv import parse_guard_argv
from mcp_tether.ladder import GRACE_AFTER_EOF, TERM_GRACE
from mcp_tether.probe.diagnose import annotate
from mcp_tether.probe.runner import run_specs
from mcp_tether.probe.scenarios import HOST_STYLES, SCENARIOS, get
from mcp_tether.probe.spec import IDLE, LEVELS, READY_TIMEOUT, ROBUST, SPEC, WINDOW, Spec
from mcp_tether.probe.verdict import Survivor

if TYPE_CHECKING:
    from mcp_tether.cliprogress import Progress
    from mcp_tether.probe.record import ProbeDocument, ScenarioRecord

__all__ = [
    "probe",
    "ProbeOptions",
    "ProbeReport",
    "ScenarioResult",
    "Survivor",
    "SCENARIOS",
    "HOST_STYLES",
    "LEVELS",
    "build_specs",
    "resolve_command",
    "level_met",
]


@dataclass(frozen=True)
class ProbeOptions:
    host_style: str = "node"
    scenarios: tuple[str, ...] | None = None  # None: all that apply to the host style
    window: float = WINDOW
    idle: float = IDLE
    ready_timeout: float = READY_TIMEOUT
    call: tuple[str, dict[str, Any]] | None = None
    env: dict[str, str] | None = None  # added to this process's environment
    cwd: str | None = None
    grace: float = GRACE_AFTER_EOF  # the client's ladder
    term_grace: float = TERM_GRACE
    horizon: float | None = None  # after the window; None: grace + term_grace
    jobs: int | None = None


# A survivor in a result's JSON: what the keeper saw besides stays in its own line.
SURVIVOR_FIELDS = ("pid", "ppid", "cmdline", "lingered_ms", "cause")


@dataclass
class ScenarioResult:
    scenario: str
    host_style: str
    verdict: str
    passed: bool
    exit_ms: float | None
    rung: str | None
    exit_status: int | None
    survivors: list[Survivor] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    detail: str = ""
    probe_cpu_ms: float | None = None
    stderr_tail: str = ""
    label: str = ""  # set by callers that probe many servers (lab, --config)
    level: str = SPEC
    guarded: bool = False
    guard_rung: str | None = None  # guarded: which rung of the guard ended the server
    call_answered: bool | None = None  # call-in-flight
    error_code: int | None = None  # 127/126 when the command could not be started
    diagnosis: str = ""  # failed: which guarantee failed and what kept the tree alive
    remedy: str = ""  # failed: what to change, fitting the server's language and launcher
    # Not in `to_dict` (the JSON of the typed result), so that stays the stable schema:
    # the keeper's whole record (timeline, survivors' evidence: what --json, --html and
    # --detail show besides), the lab's block, and the line the table prints under a row.
    record: ScenarioRecord | None = field(default=None, repr=False, compare=False,
                                          metadata={"json": False})
    block: str = field(default="", metadata={"json": False})
    explain: str = field(default="", metadata={"json": False})

    @classmethod
    def from_dict(cls, d: ScenarioRecord) -> ScenarioResult:
        """The typed view of a scenario's record, which it keeps (`record`)."""
        level = d.get("level") or (get(d["scenario"]).level if d["scenario"] in SCENARIOS
                                   else SPEC)
        return cls(
            scenario=d["scenario"],
            host_style=d["host_style"],
            verdict=d["verdict"],
            passed=bool(d["passed"]),
            exit_ms=d.get("exit_ms"),
            rung=d.get("rung"),
            exit_status=d.get("exit_status"),
            survivors=[
                Survivor(s["pid"], s.get("cmdline", ""), s.get("ppid"),
                         lingered_ms=s.get("lingered_ms"), cause=s.get("cause"))
                for s in d.get("survivors", [])
            ],
            warnings=list(d.get("warnings", [])),
            detail=d.get("detail", ""),
            probe_cpu_ms=d.get("probe_cpu_ms"),
            stderr_tail=d.get("stderr_tail", ""),
            label=d.get("label", ""),
            level=level,
            guarded=bool(d.get("guarded", False)),
            guard_rung=d.get("guard_rung"),
            call_answered=d.get("call_answered"),
            error_code=d.get("error_code"),
            diagnosis=d.get("diagnosis") or "",
            remedy=d.get("remedy") or "",
            record=d,
        )

    def to_dict(self) -> ScenarioRecord:
        """The typed result's JSON: its fields in order, each survivor's five."""
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)
                             if f.metadata.get("json", True)}
        d["survivors"] = [{k: getattr(s, k) for k in SURVIVOR_FIELDS} for s in self.survivors]
        d["warnings"] = list(self.warnings)
        return cast("ScenarioRecord", d)

    def json_row(self) -> ScenarioRecord:
        """What `probe --json` prints for it: the keeper's whole record, with the typed
        fields where both have a key (a key of the record only stays where it was, a
        typed one it lacks comes after), and the record's own survivors (with their
        evidence)."""
        record = self.record or cast("ScenarioRecord", {})
        row = cast("ScenarioRecord", dict(record, **self.to_dict()))
        row["survivors"] = record.get("survivors", row["survivors"])
        return row

    def counts_at(self, level: str) -> bool:
        """Does this scenario decide a pass at `level`? (robust counts spec ones too.)"""
        return level == ROBUST or self.level == SPEC

    @property
    def warning_only(self) -> bool:
        """A failed robust scenario at the default level: shown, never hidden, not failing."""
        return not self.passed and self.level == ROBUST


def level_met(results: list[ScenarioResult]) -> str:
    """One word: "robust" (every scenario passed, robust ones among them), "spec" (every
    spec one passed) or "none"."""
    if results and all(r.passed for r in results) and any(r.level == ROBUST for r in results):
        return ROBUST
    if results and all(r.passed for r in results if r.level == SPEC):
        return SPEC
    return "none"


@dataclass
class ProbeReport:
    command: list[str]
    results: list[ScenarioResult]
    level: str = SPEC  # the level `passed` is judged at

    def passes(self, level: str | None = None) -> bool:
        lv = level or self.level
        return all(r.passed for r in self.results if r.counts_at(lv))

    @property
    def passed(self) -> bool:
        return self.passes()

    @property
    def meets(self) -> str:
        return level_met(self.results)

    @property
    def start_error(self) -> int | None:
        """127/126 when no scenario could start the command (mirrored as the exit code)."""
        codes = {r.error_code for r in self.results}
        if self.results and len(codes) == 1 and all(r.verdict == "error" for r in self.results):
            return codes.pop()
        return None

    def to_dict(self) -> ProbeDocument:
        return {
            "command": self.command,
            "level": self.level,
            "passed": self.passed,
            "meets": self.meets,
            "guarded": any(r.guarded for r in self.results),
            "results": [r.to_dict() for r in self.results],
        }


def check_duration(name: str, value: float | None) -> None:
    """Finite and not negative, or a usage error (a nan window would never end)."""
    if value is None:
        return
    if not isinstance(value, (int, float)) or math.isnan(value) or math.isinf(value) or value < 0:
        raise UsageError(f"{name} must be a finite number of seconds >= 0, got {value!r}")


def resolve_command(argv: list[str], env: dict[str, str] | None, cwd: str | None) -> str:
    """The executable argv[0] names; CommandNotFound (127) / CommandNotExecutable (126)."""
    if not argv or not argv[0]:
        raise UsageError("no server command given (put it after `--`)")
    if cwd is not None and not os.path.isdir(cwd):
        raise UsageError(f"--cwd {cwd}: no such directory")
    name = argv[0]
    if os.sep in name:
        path = name if os.path.isabs(name) else os.path.join(cwd or os.getcwd(), name)
        if not os.path.exists(path):
            raise CommandNotFound(name)
        if os.path.isdir(path):
            raise CommandNotExecutable(name, "is a directory")
        if not os.access(path, os.X_OK):
            raise CommandNotExecutable(name)
        return path
    search = (env or {}).get("PATH", os.environ.get("PATH", os.defpath))
    found = shutil.which(name, path=search)
    if found is None:
        # Exists on PATH but not executable?
        for d in search.split(os.pathsep):
            cand = os.path.join(d or ".", name)
            if os.path.isfile(cand):
                raise CommandNotExecutable(name)
        raise CommandNotFound(name)
    return found


def build_specs(argv: list[str], opts: ProbeOptions) -> list[Spec]:
    if opts.host_style not in HOST_STYLES:
        raise UsageError(
            f"unknown host style {opts.host_style!r} (choose from {', '.join(HOST_STYLES)})"
        )
    for name in ("window", "idle", "ready_timeout", "grace", "term_grace", "horizon"):
        check_duration(f"--{name.replace('_', '-')}", getattr(opts, name))
    if opts.scenarios is not None and not opts.scenarios:
        raise UsageError("no scenario named")
    names = opts.scenarios or tuple(
        s for s in SCENARIOS
        if get(s).applies(opts.host_style) and (opts.call or not get(s).needs_call)
    )
    for s in names:
        if s not in SCENARIOS:
            raise UsageError(f"unknown scenario {s!r} (choose from {', '.join(SCENARIOS)})")
        if not get(s).applies(opts.host_style):
            raise UsageError(f"scenario {s!r} does not apply to the {opts.host_style} host style")
        if get(s).needs_call and not opts.call:
            raise UsageError(f"scenario {s!r} needs --call TOOL JSON")
    env = None
    if opts.env is not None:
        env = dict(os.environ)
        env.update(opts.env)
    # Behind our guard, a server is judged by the guard's promise: its tree is
    # gone within grace + term-grace of the client, so the window covers that ladder.
    found = parse_guard_argv(list(argv))
    guard = None if found is None else [float(found.grace), float(found.term_grace)]
    return [
        Spec(
            list(argv), s, opts.host_style, env=env, cwd=opts.cwd, window=opts.window,
            idle=opts.idle, ready_timeout=opts.ready_timeout,
            call=list(opts.call) if opts.call else None, grace=opts.grace,
            term_grace=opts.term_grace, horizon=opts.horizon, guard=guard,
        )
        for s in names
    ]


def never_started(raw: list[ScenarioRecord]) -> list[ScenarioRecord]:
    """A server that exits during start-up in every scenario that handshakes (a missing
    entry file, a crash on import) exits under `devnull` too, before it reads its stdin:
    that exit says nothing about EOF. Such a `devnull` result becomes `early-exit`
    (failed) instead of a pass; results in place, returned."""
    others = [r for r in raw if r.get("scenario") != "devnull"]
    if not others or any(r.get("verdict") != "early-exit" for r in others):
        return raw
    for r in raw:
        if r.get("scenario") == "devnull" and r.get("verdict") == "exited":
            r["verdict"], r["passed"], r["rung"], r["exit_ms"] = "early-exit", False, None, None
            r["detail"] = (f"server exited before the trigger (status {r.get('exit_status')}): "
                           "it exits during start-up in every scenario, so its exit here "
                           "says nothing about stdin at EOF")
    return raw


def probe(
    argv: list[str],
    options: ProbeOptions | None = None,
    *,
    level: str = SPEC,
    should_stop: Callable[[], bool] = lambda: False,
    progress: Progress | None = None,
) -> ProbeReport:
    """Run the lifecycle scenarios against one server command; never leaves a process.

    `should_stop()` is asked while it runs: when true, every keeper ends its tree and
    KeyboardInterrupt is raised (the CLI maps it to 128+N). `progress` is told of each
    scenario as it ends.
    """
    if level not in LEVELS:
        raise UsageError(f"unknown level {level!r} (choose from {', '.join(LEVELS)})")
    opts = options or ProbeOptions()
    resolve_command(argv, opts.env, opts.cwd)
    specs = build_specs(argv, opts)
    tell = progress.per_index([s.scenario for s in specs]) if progress else None
    raw = run_specs(specs, jobs=opts.jobs, should_stop=should_stop, on_result=tell)
    never_started(raw)
    annotate(raw, list(argv), cwd=opts.cwd)
    return ProbeReport(list(argv), [ScenarioResult.from_dict(d) for d in raw], level)
