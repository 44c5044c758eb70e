"""The host check: what does a host do to its stdio servers when it ends? (the probe's mirror)

    from mcp_tether.hostcheck import check
    result = check(["node", "host.mjs", "{server}"], scenarios=["exit", "sigkill"])
    for r in result.results: print(r["scenario"], r["verdict"])

A host is started with the recorder (`recorder.py`, a stdlib-only MCP server that writes
down every lifecycle event it sees) as its server: either `{server}` in the host's
command line is replaced by the recorder's command (as separate arguments), or, with
`host=NAME`, the recorder is written into that host's config in a throwaway HOME and
project. Once the recorder holds the host (by default its answer to `tools/list` waits:
`hold`), or the host has initialized it, the scenario ends the host its way
(`scenarios.py`) and the hold is released; the verdict says what was left of the server
after the host, and `processes` (`who.py`) which process got which signal.

Guarantees:
- Each scenario runs in a keeper process of its own (`keeper.py`), a child subreaper
  that ends and reaps everything the host started before it returns, also when the
  check is interrupted or the checking process is SIGKILLed.
- The scenarios' throwaway folder (`mcp-tether-hostcheck-*`) is removed when the check
  ends, by a stop too; one left by a SIGKILLed check is swept by the next check once
  its owner is gone (`tempdirs.owned_tempdir`).
- Bad input fails before anything starts: a missing host command raises
  `CommandNotFound` (127), one that cannot run `CommandNotExecutable` (126), no
  `{server}` and no host config `UsageError` (2).
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import cast

from mcp_tether.errors import CommandNotExecutable, CommandNotFound, UsageError
from mcp_tether.hostcheck import keys
from mcp_tether.hostcheck.callkeeper import CallsKeeper
from mcp_tether.hostcheck.config import SCOPES, host_names
from mcp_tether.hostcheck.keeper import HostKeeper, run_keeper
from mcp_tether.hostcheck.modelhosts import wiring
from mcp_tether.hostcheck.record import HostCheckRow
from mcp_tether.hostcheck.scenarios import PASSING, SCENARIOS, HostScenario, decide
from mcp_tether.hostcheck.spec import HOLDS, PLACEHOLDER, CheckSpec, spec_json
from mcp_tether.proc import ProcessId, identify
from mcp_tether.proc.reap import wait_child
from mcp_tether.proc.signals import signal_process
from mcp_tether.proc.spawn import fork_call
from mcp_tether.tempdirs import owned_tempdir

__all__ = ["check", "HostCheck", "SCENARIOS", "HostScenario", "decide", "PLACEHOLDER",
           "HOLDS", "default_scenarios", "TEMP_PREFIX"]

TEMP_PREFIX = "mcp-tether-hostcheck-"  # the check's throwaway folders (`tempdirs`)


@dataclass
class HostCheck:
    argv: list[str]
    host: str | None
    results: list[HostCheckRow] = field(default_factory=list)  # one per scenario, in order

    @property
    def passed(self) -> bool:
        return all(r["verdict"] in PASSING for r in self.results)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


def default_scenarios(host: str | None) -> list[str]:
    """Every scenario that applies: reconnect only where a config file can be edited; the
    tool-calling ones only when named (they need the host's model API)."""
    return [n for n, sc in SCENARIOS.items()
            if (not sc.config or host is not None) and not sc.model]


def _check_command(argv: Sequence[str], env: dict[str, str] | None, cwd: str | None) -> None:
    name = argv[0]
    path_var = (env or os.environ).get("PATH", os.defpath)
    if "/" in name:
        target = name if os.path.isabs(name) or cwd is None else os.path.join(cwd, name)
        if not os.path.exists(target):
            raise CommandNotFound(name)
        if os.path.isdir(target) or not os.access(target, os.X_OK):
            raise CommandNotExecutable(name)
        return
    if shutil.which(name, path=path_var) is None:
        found = shutil.which(name, mode=os.F_OK, path=path_var)
        if found is None:
            raise CommandNotFound(name)
        raise CommandNotExecutable(name)


def check(
    argv: Sequence[str],
    *,
    host: str | None = None,
    scenarios: Sequence[str] | None = None,
    pty: bool = False,
    quit: str | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    ready_timeout: float = 30.0,
    host_timeout: float = 15.0,
    settle: float = 1.0,
    eof: str = "stay",
    grandchild: bool = True,
    jobs: int = 1,
    on_result: Callable[[HostCheckRow], None] | None = None,
    hold: str = "tools/list",
    hold_wait: float = 5.0,
    wrapper: bool = False,
    signals: str = "die",
    scope: str | None = None,
    after_edit: Sequence[str] = (),
    should_stop: Callable[[], bool] = lambda: False,
    model_api: str | None = None,
    model_env: Sequence[str] = (),
    min_age: float = 30.0,
    prompt_wait: str | None = None,
) -> HostCheck:
    """Run each scenario against the host; one result row per scenario, in order.

    `jobs` scenarios run at once (each its own host); 1 keeps hosts from competing for
    the machine, which changes timings, never what is left. `hold`: where the recorder
    keeps the host waiting until the trigger (`tools/list`, `initialize`, `none`); a
    `tools/list` hold gives up `hold_wait` s after `initialized` for a host that never
    lists tools. `wrapper`: a wrapper that forwards no signal (as `sh -c 'SERVER; true'`
    and npm) stands between the host and the recorder. `signals`: `die` (the recorder
    dies of SIGTERM/SIGINT/SIGHUP/SIGQUIT, as servers do) or `stay` (it records them and
    goes on, so the host's whole ladder shows). `scope`: with `host`, the recorder goes
    into that host's `user` or `project` config file (None: the first of either).
    `after_edit`: for a host under a pty that reloads an edited server only on a
    command, what the reconnect types after its edit (`keys.parse` steps).

    The tool-calling scenarios (`idle`, `subagents`, `calls-reconnect`: never run unless
    named) start the stand-in model: `model_api` (`anthropic`, `openai`; built in for
    `--host claude-code` and `codex`), `model_env` (variables set to its base URL),
    `min_age` (the idle gap they pause for is longer), `prompt_wait` (under a pty, the
    text the host shows when it takes a prompt)."""
    argv = list(argv)
    names = _scenario_names(argv, host, scenarios)
    _refuse_options(names, host=host, eof=eof, hold=hold, signals=signals, scope=scope,
                    after_edit=after_edit, pty=pty, model_api=model_api,
                    model_env=model_env, min_age=min_age)
    if host is not None and cwd is None:
        # The host runs in the throwaway project folder: arguments naming files here
        # (a script, a config) keep pointing at them.
        argv = [os.path.abspath(a) if not a.startswith("-") and os.path.exists(a)
                and not os.path.isabs(a) else a for a in argv]
    _check_command(argv, env, cwd)
    out = HostCheck(argv, host)
    with owned_tempdir(TEMP_PREFIX) as tmp:
        # A tool-calling scenario holds nothing: a held answer would stop the very calls
        # it measures.
        specs = [CheckSpec(argv=argv, scenario=n, work=_work_dir(tmp, n), host=host, pty=pty,
                           quit=quit, env=env, cwd=cwd, ready_timeout=ready_timeout,
                           host_timeout=host_timeout, settle=settle, eof=eof,
                           grandchild=grandchild,
                           hold="none" if SCENARIOS[n].model else hold, hold_wait=hold_wait,
                           wrapper=wrapper, signals=signals, scope=scope,
                           after_edit=list(after_edit), model_api=model_api,
                           model_env=list(model_env), min_age=min_age,
                           prompt_wait=prompt_wait)
                 for n in names]
        out.results = run_scenarios(specs, jobs=jobs, on_result=on_result,
                                    should_stop=should_stop)
    return out


def _scenario_names(argv: list[str], host: str | None,
                    scenarios: Sequence[str] | None) -> list[str]:
    """The scenarios to run, once each; refused (`UsageError`) when the host command, the
    host or a scenario cannot be run."""
    if not argv:
        raise UsageError("no host command given (hostcheck -- HOST-ARGV...)")
    if host is None and PLACEHOLDER not in argv:
        raise UsageError(f"the host command has no {PLACEHOLDER} argument to replace by the "
                         "recorder's command (or name the host's config with --host NAME)")
    if host is not None and host not in host_names():
        raise UsageError(f"unknown host {host!r} (one of: {', '.join(host_names())})")
    names = list(dict.fromkeys(scenarios)) if scenarios else default_scenarios(host)
    for n in names:
        if n not in SCENARIOS:
            raise UsageError(f"unknown scenario {n!r} (one of: {', '.join(SCENARIOS)})")
        if SCENARIOS[n].config and host is None:
            raise UsageError(f"scenario {n!r} edits a host config: it needs --host NAME")
    return names


def _refuse_options(names: list[str], *, host: str | None, eof: str, hold: str,
                    signals: str, scope: str | None, after_edit: Sequence[str], pty: bool,
                    model_api: str | None, model_env: Sequence[str], min_age: float) -> None:
    """A `UsageError` for an option `check` cannot honour, before anything starts."""
    if eof not in ("stay", "exit"):
        raise UsageError("--recorder-eof is stay or exit")
    if hold not in HOLDS:
        raise UsageError(f"--hold is one of {', '.join(HOLDS)}")
    if signals not in ("die", "stay"):
        raise UsageError("--recorder-signals is die or stay")
    if scope is not None and (host is None or scope not in SCOPES):
        raise UsageError(f"--host-scope is one of {', '.join(SCOPES)}, with --host NAME")
    keys.parse(list(after_edit))
    if after_edit and not pty:
        raise UsageError("--after-edit types into the host's terminal: it needs --pty")
    if any(SCENARIOS[n].model for n in names):
        wiring(host, model_api, model_env)  # which API, which host
    elif model_api is not None or model_env:
        raise UsageError("--model-api and --model-env drive the tool-calling scenarios: "
                         "name one with -s (idle, subagents, calls-reconnect)")
    if min_age <= 0:
        raise UsageError("--min-age must be more than 0 seconds")


def _work_dir(tmp: str, scenario: str) -> str:
    """A scenario's own folder under the check's temporary one."""
    work = os.path.join(tmp, scenario)
    os.makedirs(work)
    return work


@dataclass
class _Running:
    spec: CheckSpec
    pid: int
    ident: ProcessId | None
    res_r: int
    life_w: int
    data: bytes = b""


def _start(spec: CheckSpec) -> _Running:
    """Fork one scenario's keeper (own session; SIGTERM when we die)."""
    text = spec_json(spec)
    res_r, res_w = os.pipe()
    life_r, life_w = os.pipe()

    def drop_driver_state() -> None:
        os.close(res_r)
        os.close(life_w)

    keeper = CallsKeeper if SCENARIOS[spec.scenario].model else HostKeeper
    pid = fork_call(lambda: run_keeper(text, res_w, life_r, keeper), before=drop_driver_state,
                    new_session=True, pdeathsig=signal.SIGTERM, reset_signals=True)
    os.close(res_w)
    os.close(life_r)
    return _Running(spec, pid, identify(pid), res_r, life_w)


def _finish(run: _Running) -> HostCheckRow:
    os.close(run.res_r)
    os.close(run.life_w)
    wait_child(run.pid)
    try:
        return cast("HostCheckRow", dict(json.loads(run.data)))
    except ValueError:
        return {"scenario": run.spec.scenario, "verdict": "error", "passed": False,
                "detail": "the scenario's keeper died without a result", "events": []}


def run_scenarios(
    specs: list[CheckSpec],
    *,
    jobs: int = 1,
    on_result: Callable[[HostCheckRow], None] | None = None,
    should_stop: Callable[[], bool] = lambda: False,
) -> list[HostCheckRow]:
    """Run the scenarios' keepers, up to `jobs` at a time; results in `specs` order.

    Each keeper's one result line is read as it comes (poll on the result pipes) and the
    keeper reaped at its EOF. Ctrl-C, or `should_stop()` true (a `StopSignals`: its fd
    wakes the poll at once): every running keeper is told (SIGTERM, identity checked),
    still read and reaped, then KeyboardInterrupt goes on; no new one starts.
    """
    wake = getattr(should_stop, "fileno", None)
    todo = list(specs)
    running: dict[int, _Running] = {}
    done: dict[str, HostCheckRow] = {}
    interrupted: BaseException | None = None
    try:
        while todo or running:
            while todo and len(running) < max(1, jobs) and interrupted is None:
                run = _start(todo.pop(0))
                running[run.res_r] = run
            if not running:
                break
            poll = select.poll()
            for fd in running:
                poll.register(fd, select.POLLIN)
            if wake is not None and interrupted is None:
                poll.register(wake(), select.POLLIN)
            try:
                ready = poll.poll()
                if interrupted is None and should_stop():
                    raise KeyboardInterrupt
            except KeyboardInterrupt as exc:
                interrupted, todo = exc, []
                for run in running.values():
                    if run.ident is not None:
                        signal_process(run.ident, signal.SIGTERM)
                continue
            for fd, _ev in ready:
                if fd not in running:
                    continue  # the stop signal's fd: should_stop() saw it
                run = running[fd]
                chunk = os.read(fd, 65536)
                if chunk:
                    run.data += chunk
                    continue
                del running[fd]
                r = _finish(run)
                done[run.spec.scenario] = r
                if on_result is not None and interrupted is None:  # stopped: no more said
                    on_result(r)
    finally:
        for run in running.values():  # an error of ours: the keepers still end and are reaped
            if run.ident is not None:
                signal_process(run.ident, signal.SIGTERM)
            _finish(run)
    if interrupted is not None:
        raise interrupted
    return [done[sp.scenario] for sp in specs if sp.scenario in done]
