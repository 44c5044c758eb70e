"""The probe's public API: options, typed results, and `probe()` itself.

    report = probe(["node", "server.js"], ProbeOptions(host_style="node"))
    report.passed, [r.verdict for r in report.results]

Each scenario runs in a keeper process of its own (see `keeper.py`), all in parallel.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass, field
from typing import Any

from mcp_tether.errors import CommandNotExecutable, CommandNotFound, UsageError
from mcp_tether.probe.scenarios import HOST_STYLES, SCENARIOS, applies

__all__ = [
    "probe",
    "ProbeOptions",
    "ProbeReport",
    "ScenarioResult",
    "Survivor",
    "SCENARIOS",
    "HOST_STYLES",
    "build_specs",
    "resolve_command",
]


@dataclass(frozen=True)
class ProbeOptions:
    host_style: str = "node"
    scenarios: tuple[str, ...] | None = None  # None: all that apply to the host style
    window: float = 2.0
    idle: float = 3.0
    ready_timeout: float = 10.0
    call: tuple[str, dict[str, Any]] | None = None
    env: dict[str, str] | None = None  # added to this process's environment
    cwd: str | None = None
    grace: float = 2.0  # the client's ladder
    term_grace: float = 2.0
    jobs: int | None = None


@dataclass
class Survivor:
    pid: int
    ppid: int | None
    cmdline: str


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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ScenarioResult:
        return cls(
            scenario=d["scenario"],
            host_style=d["host_style"],
            verdict=d["verdict"],
            passed=bool(d["passed"]),
            exit_ms=d.get("exit_ms"),
            rung=d.get("rung"),
            exit_status=d.get("exit_status"),
            survivors=[
                Survivor(s["pid"], s.get("ppid"), s.get("cmdline", ""))
                for s in d.get("survivors", [])
            ],
            warnings=list(d.get("warnings", [])),
            detail=d.get("detail", ""),
            probe_cpu_ms=d.get("probe_cpu_ms"),
            stderr_tail=d.get("stderr_tail", ""),
            label=d.get("label", ""),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProbeReport:
    command: list[str]
    results: list[ScenarioResult]

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "passed": self.passed,
            "results": [r.to_dict() for r in self.results],
        }


def resolve_command(argv: list[str], env: dict[str, str] | None, cwd: str | None) -> str:
    """The executable argv[0] names; CommandNotFound (127) / CommandNotExecutable (126)."""
    if not argv:
        raise UsageError("no server command given (put it after `--`)")
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


def build_specs(argv: list[str], opts: ProbeOptions) -> list[dict[str, Any]]:
    if opts.host_style not in HOST_STYLES:
        raise UsageError(
            f"unknown host style {opts.host_style!r} (choose from {', '.join(HOST_STYLES)})"
        )
    names = opts.scenarios or tuple(s for s in SCENARIOS if applies(s, opts.host_style))
    for s in names:
        if s not in SCENARIOS:
            raise UsageError(f"unknown scenario {s!r} (choose from {', '.join(SCENARIOS)})")
        if not applies(s, opts.host_style):
            raise UsageError(f"scenario {s!r} does not apply to the {opts.host_style} host style")
    env = None
    if opts.env is not None:
        env = dict(os.environ)
        env.update(opts.env)
    return [
        {
            "argv": list(argv),
            "env": env,
            "cwd": opts.cwd,
            "host_style": opts.host_style,
            "scenario": s,
            "window": opts.window,
            "idle": opts.idle,
            "ready_timeout": opts.ready_timeout,
            "call": list(opts.call) if opts.call else None,
            "grace": opts.grace,
            "term_grace": opts.term_grace,
        }
        for s in names
    ]


def probe(argv: list[str], options: ProbeOptions | None = None) -> ProbeReport:
    """Run the lifecycle scenarios against one server command; never leaves a process."""
    from mcp_tether.probe.runner import run_specs

    opts = options or ProbeOptions()
    resolve_command(argv, opts.env, opts.cwd)
    specs = build_specs(argv, opts)
    raw = run_specs(specs, jobs=opts.jobs)
    return ProbeReport(list(argv), [ScenarioResult.from_dict(r) for r in raw])
