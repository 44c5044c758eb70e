"""The guard's report (`guard.report`): one JSON line on MCP_TETHER_REPORT_FD, real runs.

The fixture server writes what it can see of the contract (is the variable in its
environment, which fds it holds) to <pidfile>.seen, then acts by its mode:
  eof        read stdin to EOF, exit with the given code
  ignore-eof read to EOF, stay alive (a non-daemon thread); a daemon out of its group
             (setsid, stdio on /dev/null, SIGTERM default) writes <pidfile>.daemon
  stubborn   like ignore-eof without the daemon, and SIGTERM is ignored
  launcher   fork the real server (setsid, keeps stdio, ignores EOF, writes
             <pidfile>.daemon) and exit 0 at once
  setuid     become uid 65534 and sleep: a guard without CAP_KILL cannot signal it
The report is read from a `ReportPipe` (the probe's own reader) after the guard exited.
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.guard.report import (
    REPORT_ENV,
    GuardReport,
    ReportError,
    ReportPipe,
    read_report,
)
from mcp_tether.probe import ProbeOptions, probe
from mcp_tether.probe.outcome import guard_rung
from mcp_tether.proc import SAME, ProcessId, compare, identify, wait_gone
from mcp_tether.proc.signals import signal_process
from polling import until

pytestmark = pytest.mark.linux

FAST = ["--grace", "0.3", "--term-grace", "0.3"]
# For a server that exits by itself at EOF: a grace never waited when it does.
ROOMY = ["--grace", "60", "--term-grace", "0.3"]
DEADLINE = 10.0
MINI = str(Path(__file__).parent / "servers" / "mini.py")

SERVER = r'''
import json, os, signal, sys, threading, time

mode, pidfile = sys.argv[1], sys.argv[2]
code = int(sys.argv[3]) if len(sys.argv) > 3 else 0

def note(path, text):
    with open(path + ".tmp", "w") as fh:
        fh.write(text)
    os.rename(path + ".tmp", path)

def forever():
    while True:
        time.sleep(3600)

fds = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        fds[fd] = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
note(pidfile + ".seen", json.dumps({"env": os.environ.get("MCP_TETHER_REPORT_FD"),
                                    "fds": fds}))
if mode == "setuid":
    note(pidfile, str(os.getpid()))  # first: the new user may not write here
    os.setresuid(65534, 65534, 65534)
    forever()
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "ignore-eof" and os.fork() == 0:
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    note(pidfile + ".daemon", str(os.getpid()))
    forever()
if mode == "launcher":
    if os.fork():
        note(pidfile, str(os.getpid()))
        os._exit(0)
    os.setsid()
    note(pidfile + ".daemon", str(os.getpid()))
    threading.Thread(target=forever).start()
else:
    note(pidfile, str(os.getpid()))
if mode in ("ignore-eof", "stubborn"):
    threading.Thread(target=forever).start()
while os.read(0, 65536):
    pass
sys.exit(code)
'''


class Run:
    """One guard run with a report pipe; the server's pid files under `tmp`."""

    def __init__(self, tmp: Path, mode: str, code: int = 0, *, fd_value: str | None = None,
                 stdin: int | None = subprocess.PIPE, extra_fds: tuple[int, ...] = (),
                 preexec: Callable[[], None] | None = None,
                 ladder: list[str] | None = None) -> None:
        script = tmp / "server.py"
        if not script.exists():
            script.write_text(SERVER)
        self.pidfile = str(tmp / f"pid-{mode}-{len(list(tmp.glob('pid-*.seen')))}")
        self.pipe = ReportPipe()
        env = dict(os.environ)
        env[REPORT_ENV] = str(self.pipe.write_fd) if fd_value is None else fd_value
        self.err = open(tmp / f"{Path(self.pidfile).name}.err", "w+b")  # noqa: SIM115
        self.out = open(tmp / f"{Path(self.pidfile).name}.out", "w+b")  # noqa: SIM115
        ladder = FAST if ladder is None else ladder
        argv = [sys.executable, "-m", "mcp_tether", "run", *ladder, "--",
                sys.executable, str(script), mode, self.pidfile, str(code)]
        self.proc = subprocess.Popen(argv, stdin=stdin, stdout=self.out, stderr=self.err,
                                     env=env, pass_fds=(self.pipe.write_fd, *extra_fds),
                                     preexec_fn=preexec)
        self.pipe.close_writer()

    def seen(self) -> dict[str, Any]:
        seen: dict[str, Any] = json.loads(_until_file(self.pidfile + ".seen"))
        return seen

    def ident(self, suffix: str = "") -> ProcessId:
        pid = int(_until_file(self.pidfile + suffix))
        ident = identify(pid)
        assert ident is not None, f"{suffix or 'server'} {pid} already gone"
        return ident

    def end(self) -> tuple[int, GuardReport | None, str, bytes]:
        """Close the client's stdin; the exit status, the report, stderr, stdout."""
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        rc = self.proc.wait(DEADLINE)
        report = self.pipe.read()
        self.err.seek(0)
        self.out.seek(0)
        err, out = self.err.read().decode(), self.out.read()
        self.err.close()
        self.out.close()
        return rc, report, err, out


def _until_file(path: str) -> str:
    until(lambda: os.path.exists(path) and Path(path).read_text(), path, DEADLINE)
    return Path(path).read_text()


def _uid(pid: int) -> str | None:
    """The real uid of a live process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as fh:
            return next(ln.split()[1] for ln in fh if ln.startswith("Uid:"))
    except OSError:
        return None


# -- real runs -------------------------------------------------------------------------
def test_a_server_exiting_by_itself_is_reported_and_never_sees_the_report_fd(
    tmp_path: Path,
) -> None:
    """1. A server that exits on EOF with status 3; 2. the report says stdin-hangup,
    `self`, status 3, its pid; 3. the line round-trips; 4. the server saw neither the
    variable nor the pipe (by inode), though the guard held it."""
    run = Run(tmp_path, "eof", 3, ladder=ROOMY)
    server = run.ident()
    ino = os.fstat(run.pipe.read_fd).st_ino
    rc, report, err, out = run.end()
    assert rc == 3 and out == b"" and report is not None, err
    assert (report.reason, report.ended_by, report.exit_status, report.server_status) == (
        "stdin-hangup", "self", 3, 3)
    assert report.server_pid == server.pid and not report.survivors
    assert [r.action for r in report.rungs] == ["close-stdin"]
    assert report.rungs[0].outcome == "exited" and report.elapsed_ms >= 0
    assert read_report(report.to_json()) == report
    seen = run.seen()
    assert seen["env"] is None
    assert f"pipe:[{ino}]" not in seen["fds"].values(), seen["fds"]
    assert "mcp-tether run: client gone" in err  # the human line is still there


def test_the_sigterm_rung_and_an_escaped_daemon_are_reported(tmp_path: Path) -> None:
    """A server that ignores EOF, with a daemon outside its group: ended at the SIGTERM
    rung; the daemon is named as an escapee by its (pid, start) identity."""
    run = Run(tmp_path, "ignore-eof")
    daemon = run.ident(".daemon")
    rc, report, err, _out = run.end()
    assert rc == 143 and report is not None, err
    assert report.ended_by == "sigterm" and report.exit_status == 143
    assert [(r.action, r.outcome) for r in report.rungs] == [
        ("close-stdin", "timeout"), ("sigterm", "exited")]
    assert report.rungs[1].ms >= 300.0 * 0.9
    assert report.escapees == [daemon] and report.counts["escapees"] == 1
    assert report.counts["others"] == 1 and not report.survivors


def test_the_sigkill_rung_is_reported_for_a_server_ignoring_sigterm(tmp_path: Path) -> None:
    run = Run(tmp_path, "stubborn")
    run.ident()
    rc, report, err, _out = run.end()
    assert rc == 137 and report is not None, err
    assert report.ended_by == "sigkill" and report.server_status == 137
    assert [r.action for r in report.rungs] == ["close-stdin", "sigterm", "sigkill"]


def test_a_signal_to_the_guard_is_the_reason_and_a_forwarded_sigterm_the_rung(
    tmp_path: Path,
) -> None:
    """SIGTERM to the guard, forwarded to the server, which dies of it: reason `signal`,
    `forwarded`, ended by `sigterm`. A forwarded SIGINT the server leaves on is no rung
    of the guard's: `self`."""
    for sig, by in ((signal.SIGTERM, "sigterm"), (signal.SIGINT, "self")):
        run = Run(tmp_path, "eof")
        server = run.ident()
        run.proc.send_signal(sig)  # our own child, not yet reaped
        assert wait_gone(server, DEADLINE)  # before stdin closes: the signal came first
        _rc, report, err, _out = run.end()
        assert report is not None, err
        assert (report.reason, report.signal, report.forwarded, report.ended_by) == (
            "signal", sig.name, True, by), err


def test_stop_signals_at_the_end_of_a_run_cannot_cut_off_the_report(tmp_path: Path) -> None:
    """The host's SIGTERMs keep coming while the guard finishes (the front forwards each
    to the supervisor): the report and the summary line are still written. A SIGTERM
    that arrives once the run's signal handlers are gone would otherwise kill the
    supervisor first (unprotected, 39 of 40 rounds lost the report)."""
    for _round in range(5):
        run = Run(tmp_path, "eof")
        run.ident()
        assert run.proc.stdin is not None
        run.proc.stdin.close()
        while run.proc.poll() is None:  # pacing a storm, not waiting for a state
            run.proc.send_signal(signal.SIGTERM)  # our own child, not yet reaped
            time.sleep(0.0005)
        rc, report, err, _out = run.end()
        assert report is not None and report.exit_status == rc, (rc, err)
        assert "mcp-tether run:" in err, (rc, err)


def test_a_launchers_hand_over_is_reported_with_its_holders(tmp_path: Path) -> None:
    """The launcher exits 0 at once; the real server on its stdio ignores EOF: the
    report names it as a holder, ended at the SIGTERM rung, status 143."""
    run = Run(tmp_path, "launcher")
    real = run.ident(".daemon")
    rc, report, err, _out = run.end()
    assert rc == 143 and report is not None, err
    assert report.holders == [real] and report.server_status == 0
    assert report.ended_by == "sigterm" and report.exit_status == 143


def _drop_cap_kill() -> None:
    """In the guard's child before exec: no CAP_KILL for it or anything it runs."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(24, 5, 0, 0, 0) != 0:  # PR_CAPBSET_DROP, CAP_KILL
        os._exit(99)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to take CAP_KILL away")
def test_survivors_are_reported_by_identity(tmp_path: Path) -> None:
    """A guard without CAP_KILL, a server that became another user: every signal is
    denied; the report says `none` and names the server as a survivor, (pid, start)."""
    run = Run(tmp_path, "setuid", preexec=_drop_cap_kill)
    server = run.ident()
    try:
        until(lambda: _uid(server.pid) in ("65534", None), "the server's setresuid", DEADLINE)
        rc, report, err, _out = run.end()
        assert rc != 99, "could not drop CAP_KILL here"
        assert report is not None, err
        assert report.ended_by == "none" and report.survivors == [server]
        assert report.counts["survivors"] == 1 and report.server_status is None
        assert report.rungs[-1].outcome == "denied"
    finally:
        if compare(server) == SAME:  # we started it (through the guard): end it
            signal_process(server, 9)
            wait_gone(server, DEADLINE)


def test_a_command_that_cannot_start_still_gets_its_line(tmp_path: Path) -> None:
    pipe = ReportPipe()
    env = {**os.environ, REPORT_ENV: str(pipe.write_fd)}
    p = subprocess.run([sys.executable, "-m", "mcp_tether", "run", "--", "no-such-cmd-h5"],
                       stdin=subprocess.DEVNULL, capture_output=True, env=env,
                       pass_fds=(pipe.write_fd,), timeout=DEADLINE, check=False)
    pipe.close_writer()
    report = pipe.read()
    assert p.returncode == 127 and report is not None
    assert (report.reason, report.exit_status, report.ended_by) == ("not-started", 127, "none")


def test_bad_report_fds_cost_one_warning_line_and_the_run_goes_on(tmp_path: Path) -> None:
    """0, 1, 2 (stdout is protocol-only), garbage, a negative number, a closed fd, a
    read-only fd: one warning line each, no byte on stdout, the server runs and exits as
    usual and never sees the variable. Its stdin is at EOF from the start, so the grace is
    long: a server still starting under load must get to its own exit, not a SIGTERM."""
    ro = os.open(os.devnull, os.O_RDONLY)
    try:
        for value in ("0", "1", "2", "five", "-4", "250", str(ro)):
            # `ro` is passed on, but open for reading only
            run = Run(tmp_path, "eof", 0, fd_value=value, stdin=subprocess.DEVNULL,
                      extra_fds=(ro,), ladder=["--grace", str(DEADLINE)])
            rc, report, err, out = run.end()
            warnings = [ln for ln in err.splitlines() if REPORT_ENV in ln]
            assert rc == 0 and out == b"" and report is None, (value, err)
            assert len(warnings) == 1 and "warning" in warnings[0], (value, err)
            assert run.seen()["env"] is None, value
    finally:
        os.close(ro)


# -- the reader ------------------------------------------------------------------------
def _line(**changes: object) -> str:
    d = GuardReport(reason="stdin-hangup", exit_status=0, ended_by="self").to_dict()
    d.update(changes)
    return json.dumps(d)


@pytest.mark.parametrize(("text", "why"), [
    ("not json", "not JSON"),
    ("[1, 2]", "not a JSON object"),
    (_line(version=2), "version 2"),
    (_line(version=True), "version True"),
    (_line(ended_by="sigquit"), "ended_by 'sigquit'"),
    (_line(exit_status="0"), "'exit_status' is '0'"),
    (_line(exit_status=True), "'exit_status' is True"),
    (_line(survivors=[{"pid": 1}]), "'start' missing"),
    (_line(rungs=["sigterm"]), "expected an object holding 'action'"),
])
def test_read_report_rejects_garbage_and_other_versions_with_one_line(
    text: str, why: str
) -> None:
    with pytest.raises(ReportError, match=why) as info:
        read_report(text)
    assert "\n" not in str(info.value)


def test_read_report_ignores_fields_a_later_writer_adds() -> None:
    assert read_report(_line(new_field=[1])).ended_by == "self"


def _pipe_with(data: bytes) -> ReportPipe:
    pipe = ReportPipe()
    os.write(pipe.write_fd, data)
    pipe.close_writer()
    return pipe


def test_the_probes_rung_comes_from_the_report_alone() -> None:
    """guard_rung reads only the report: survivors mean `none`; no report is None; an
    unreadable one is `unknown`, with the reason kept for the result's warnings."""
    assert guard_rung(None) is None
    assert guard_rung(_pipe_with(b"")) is None
    assert guard_rung(_pipe_with((_line(ended_by="sigkill") + "\n").encode())) == "sigkill"
    survivor = [{"pid": 7, "start": 1.0}]
    line = _line(ended_by="self", survivors=survivor,
                 counts={"others": 0, "survivors": 1, "escapees": 0, "holders": 0})
    assert guard_rung(_pipe_with((line + "\n").encode())) == "none"
    for data, why in ((b"mcp-tether run: SIGKILL after 4 ms\n", "not JSON"),
                      ((_line(version=9) + "\n").encode(), "version 9"),
                      (_line().encode(), "cut short")):
        pipe = _pipe_with(data)
        assert guard_rung(pipe) == "unknown" and why in (pipe.error or ""), data


def test_a_guarded_probe_names_the_rung_with_the_guards_summary_silenced() -> None:
    """MCP_TETHER_LOG=quiet: the guard writes no human line at all, and the probe still
    names the SIGTERM rung (the phrase search it replaced found nothing here: None)."""
    argv = [sys.executable, "-m", "mcp_tether", "run", *FAST, "--",
            sys.executable, "-S", MINI, "--thread"]
    report = probe(argv, ProbeOptions(scenarios=("exit",), window=1.0,
                                      env={"MCP_TETHER_LOG": "quiet"}))
    (r,) = report.results
    assert "mcp-tether run:" not in r.stderr_tail
    assert (r.verdict, r.guarded, r.guard_rung) == ("exited", True, "sigterm"), r.detail
    assert r.detail == "guarded: the guard ended it at rung sigterm"


@pytest.mark.slow  # waits the guard's WRITE_WAIT (2 s) on purpose
def test_a_reader_that_never_reads_cannot_hang_the_guard(tmp_path: Path) -> None:
    """The report pipe is full before the run: the guard gives up on the line after
    WRITE_WAIT with one warning, and exits with the server's status as ever."""
    r, w = os.pipe()
    try:
        os.set_blocking(w, False)
        try:
            while True:
                os.write(w, b"x" * 65536)
        except BlockingIOError:
            pass
        env = {**os.environ, REPORT_ENV: str(w)}
        p = subprocess.run([sys.executable, "-m", "mcp_tether", "run", "--", "true"],
                           stdin=subprocess.DEVNULL, capture_output=True, env=env,
                           pass_fds=(w,), timeout=DEADLINE, check=False)
        warnings = [ln for ln in p.stderr.decode().splitlines() if REPORT_ENV in ln]
        assert p.returncode == 0 and p.stdout == b"", p.stderr
        assert len(warnings) == 1 and "no room" in warnings[0], p.stderr
    finally:
        os.close(r)
        os.close(w)


def test_behind_a_launcher_that_drops_the_descriptor_the_probe_names_no_rung(
    tmp_path: Path,
) -> None:
    """A `uvx` that closes inherited fds before it runs the guard (as a launcher on
    Node's child_process would): the guard says so in one line, there is no report,
    and the probe's guard_rung is null rather than a guess."""
    uvx = tmp_path / "uvx"
    uvx.write_text(f"#!{sys.executable}\nimport os, sys\n"
                   f"os.close(int(os.environ[{REPORT_ENV!r}]))\n"
                   "py = sys.executable\n"
                   "os.execv(py, [py, '-m', 'mcp_tether', *sys.argv[2:]])\n")
    uvx.chmod(0o755)
    argv = ["uvx", "mcp-tether", "run", *FAST, "--", sys.executable, "-S", MINI, "--thread"]
    opts = ProbeOptions(scenarios=("exit",), window=1.0,
                        env={"PATH": f"{tmp_path}:{os.environ['PATH']}"})
    (r,) = probe(argv, opts).results
    assert (r.verdict, r.guarded, r.guard_rung) == ("exited", True, None), r.stderr_tail
    assert f"{REPORT_ENV}=" in r.stderr_tail and "not an open descriptor" in r.stderr_tail
    assert "mcp-tether run: client gone" in r.stderr_tail  # the run went on as ever
