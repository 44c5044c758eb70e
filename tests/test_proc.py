"""The process core: identity, trees, exit waits, identity-checked signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mcp_tether import platform
from mcp_tether.errors import CommandNotExecutable, CommandNotFound, WorkingDirectoryError
from mcp_tether.proc import (
    DIFFERENT,
    SAME,
    ExitWaiter,
    ProcessId,
    ProcRecord,
    cmdline,
    compare,
    descendants,
    identify,
    signal_group,
    signal_process,
    wait_gone,
)
from mcp_tether.proc.reap import exit_status, reap_children
from mcp_tether.proc.signals import pin
from mcp_tether.proc.spawn import spawn
from mcp_tether.proc.table import End
from polling import until

SLEEPER = [sys.executable, "-c", "import time\nwhile True: time.sleep(1)"]


def test_identity_is_pid_and_start_time_and_a_reused_pid_is_different() -> None:
    """1. identify a live child; 2. a fake start time makes it a different process."""
    p = subprocess.Popen(SLEEPER)
    try:
        ident = identify(p.pid)
        assert ident is not None and ident.pid == p.pid
        assert compare(ident) == SAME
        assert compare(ProcessId(p.pid, ident.start + 1)) == DIFFERENT
    finally:
        p.kill()
        p.wait()
    assert compare(ident) == DIFFERENT


def test_a_zombie_counts_as_exited_although_kill_0_says_alive() -> None:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    ident = identify(p.pid) or ProcessId(p.pid, 0)
    assert wait_gone(ident, 10) is not None
    os.kill(p.pid, 0)  # the zombie still "exists" for kill(2)
    assert compare(ident) == DIFFERENT
    assert identify(p.pid) is None
    p.wait()


def test_signal_process_never_signals_a_reused_pid() -> None:
    p = subprocess.Popen(SLEEPER)
    try:
        real = identify(p.pid)
        assert real is not None
        impostor = ProcessId(p.pid, real.start - 1)  # "the pid was reused since the scan"
        assert signal_process(impostor, signal.SIGKILL) == "gone"
        assert p.poll() is None
        assert signal_process(real, signal.SIGKILL) == "sent"
        assert wait_gone(real, 10) is not None
    finally:
        p.kill()
        p.wait()


def test_signal_group_needs_a_known_live_member() -> None:
    p = subprocess.Popen(SLEEPER, start_new_session=True)
    try:
        ident = identify(p.pid)
        assert ident is not None
        assert signal_group(p.pid, signal.SIGTERM, []) == "gone"
        assert p.poll() is None
        assert signal_group(p.pid, signal.SIGTERM, [ident]) == "sent"
        assert p.wait(10) == -signal.SIGTERM
    finally:
        p.kill()
        p.wait()


def test_descendants_include_grandchildren() -> None:
    code = (
        "import subprocess,sys,time\np=subprocess.Popen(sys.argv[1:])\n"
        "print(p.pid,flush=True)\np.wait()"
    )
    p = subprocess.Popen([sys.executable, "-c", code, *SLEEPER], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout is not None
        grandchild = int(p.stdout.readline())
        pids = {d.pid for d in descendants(p.pid)}
        assert grandchild in pids
        assert {d.pid for d in descendants(os.getpid())} >= {p.pid, grandchild}
    finally:
        gi = identify(grandchild)
        if gi:
            signal_process(gi, signal.SIGKILL)
        p.wait(10)
        p.stdout.close() if p.stdout else None


def test_exit_waiter_reports_the_exit_instant_without_sleeping() -> None:
    p = subprocess.Popen(SLEEPER)
    ident = identify(p.pid)
    assert ident is not None
    with ExitWaiter([ident]) as w:
        assert w.wait(0) == []
        t0 = time.monotonic()
        p.kill()
        done = []
        deadline = time.monotonic() + 10
        while not done and time.monotonic() < deadline:
            done = w.wait(deadline - time.monotonic())
        assert done == [ident]
        assert w.exited[ident] >= t0
    p.wait()


def test_an_unknown_backend_is_one_clear_line_and_exit_2() -> None:
    """MCP_TETHER_BACKEND names the backend; a typo is a usage error, never a trace."""
    env = {**os.environ, "MCP_TETHER_BACKEND": "macos"}
    r = subprocess.run([sys.executable, "-m", "mcp_tether", "run", "--", "true"], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == [
        "mcp-tether run: MCP_TETHER_BACKEND='macos' is not a backend (choose one of: "
        "linux, portable, darwin, darwin-sim, or leave it unset)"]


def test_capabilities_are_probed_once_and_consistent() -> None:
    assert platform.BACKEND in platform.BACKENDS
    assert platform.has_pidfd() in (True, False)
    assert platform.has_pidfd() == platform.backend.HAS_PIDFD


# -- the core API: reaping, the signal inbox, spawn, ending a tree, pinned handles -------
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux primitives")


def _in_fresh_process(code: str, timeout: float = 30.0) -> dict[str, object]:
    """Run `code` in a new Python process (no other children, its own signal state);
    it prints one JSON object as its last line, which is returned."""
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_exit_status_is_the_code_or_128_plus_the_signal() -> None:
    """1. a child exiting 3 gives 3; 2. a child killed by SIGTERM gives 143."""
    out = _in_fresh_process("""
        import json, signal, sys
        from mcp_tether.proc.reap import exit_status, wait_child
        from mcp_tether.proc.spawn import spawn
        a = spawn([sys.executable, "-c", "raise SystemExit(3)"])
        b = spawn([sys.executable, "-c", "import signal; signal.raise_signal(15)"])
        print(json.dumps([exit_status(wait_child(a.pid)), exit_status(wait_child(b.pid))]))
    """)
    assert out == [3, 143]


def test_has_children_is_false_exactly_when_no_child_is_left_to_reap() -> None:
    """1. no child: False; 2. a running child: True; 3. its zombie: still True (nothing
    reaped by looking); 4. after reap_children took its status: False."""
    out = _in_fresh_process("""
        import json, os, sys, time
        from mcp_tether.proc.reap import has_children, reap_children, exit_status
        from mcp_tether.proc.spawn import spawn
        from mcp_tether.proc import wait_gone
        seen = [has_children()]
        r, w = os.pipe()
        child = spawn([sys.executable, "-c", "import sys; sys.stdin.read(); raise SystemExit(5)"],
                      stdin=r)
        os.close(r)
        seen.append(has_children())
        os.close(w)
        wait_gone(child.ident, 10)
        seen.append(has_children())
        seen.append(has_children())
        reaped = reap_children()
        seen.append(has_children())
        print(json.dumps({"seen": seen, "reaped": [[p, exit_status(s)] for p, s in reaped],
                          "pid": child.pid}))
    """)
    assert out["seen"] == [False, True, True, True, False]
    assert out["reaped"] == [[out["pid"], 5]]


def test_the_signal_inbox_records_and_restores_and_refuses_other_threads() -> None:
    """1. SIGUSR1 raised twice is recorded twice and wakes fileno(); 2. restore() puts
    the previous handler back; 3. from a non-main thread: RuntimeError, nothing set."""
    out = _in_fresh_process("""
        import json, select, signal, threading
        from mcp_tether.proc.inbox import SignalInbox
        def mine(*a): pass
        signal.signal(signal.SIGUSR1, mine)
        with SignalInbox([signal.SIGUSR1, signal.SIGUSR2]) as inbox:
            before = select.select([inbox], [], [], 0)[0] != []
            signal.raise_signal(signal.SIGUSR1)
            signal.raise_signal(signal.SIGUSR1)
            woke = select.select([inbox], [], [], 5)[0] != []
            got = inbox.drain()
            again = inbox.drain()
        restored = signal.getsignal(signal.SIGUSR1) is mine
        errors = []
        def other():
            try:
                SignalInbox([signal.SIGUSR2])
            except RuntimeError as exc:
                errors.append(str(exc))
        t = threading.Thread(target=other); t.start(); t.join()
        print(json.dumps({"before": before, "woke": woke, "got": got, "again": again,
                          "restored": restored, "errors": errors,
                          "usr2": signal.getsignal(signal.SIGUSR2) == signal.SIG_DFL}))
    """)
    assert out["before"] is False and out["woke"] is True
    assert out["got"] == [signal.SIGUSR1, signal.SIGUSR1] and out["again"] == []
    assert out["restored"] is True and out["usr2"] is True
    assert len(out["errors"]) == 1 and "main thread" in out["errors"][0]  # type: ignore[index]


@linux
def test_spawn_starts_a_new_session_and_knows_its_child_by_identity() -> None:
    """1. spawn a sleeper; 2. its ident is what /proc says, it leads its own session,
    its pidfd pins it; 3. SIGKILL through pin(), reap: status 137."""
    child = spawn(SLEEPER)
    try:
        assert identify(child.pid) == child.ident
        assert os.getsid(child.pid) == child.pid and os.getpgid(child.pid) == child.pid
        assert (child.pidfd is not None) == platform.has_pidfd()
        pinned = pin(child.ident)
        assert pinned is not None
        with pinned:
            assert pinned.signal(signal.SIGKILL) == "sent"
    finally:
        _, st = os.waitpid(child.pid, 0)
        child.close()
    assert exit_status(st) == 128 + signal.SIGKILL
    assert pin(child.ident) is None


def test_spawn_errors_say_what_failed_before_anything_runs(tmp_path: Path) -> None:
    """Missing command 127, directory 126, no #! line 126 (exec format), missing cwd:
    its own error naming the directory; no child is left to reap."""
    noshebang = tmp_path / "noshebang"
    noshebang.write_text("echo hi\n")
    noshebang.chmod(0o755)
    with pytest.raises(CommandNotFound) as nf:
        spawn(["no-such-command-xyz"])
    assert nf.value.exit_code == 127
    with pytest.raises(CommandNotExecutable) as ne:
        spawn([str(tmp_path)])
    assert ne.value.exit_code == 126
    with pytest.raises(CommandNotExecutable) as fmt:
        spawn([str(noshebang)])
    assert fmt.value.exit_code == 126 and "format" in fmt.value.msg
    with pytest.raises(WorkingDirectoryError) as wd:
        spawn(["true"], cwd=str(tmp_path / "gone"))
    assert wd.value.exit_code == 2 and "gone" in wd.value.msg and "command" not in wd.value.msg
    assert reap_children() == []


# A program that says it ran: the pipes (FIFOs) it holds above stdio, then waits.
SAYS_IT_RAN = textwrap.dedent("""
    import os, stat, sys, time
    fifos = []
    for fd in range(3, 1024):
        try:
            if stat.S_ISFIFO(os.fstat(fd).st_mode):
                fifos.append(fd)
        except OSError:
            pass
    with open(sys.argv[1] + ".tmp", "w") as fh:
        fh.write(" ".join(map(str, fifos)) or "-")
    os.rename(sys.argv[1] + ".tmp", sys.argv[1])
    while True:
        time.sleep(1)
""")


def test_a_gated_spawn_execs_only_at_go_and_the_program_holds_no_end_of_the_gate(
    tmp_path: Path,
) -> None:
    """1. spawn(gate=True): the child is known by identity and still this process's image
    (argv ours: it has not exec'd); 2. go(): the program runs, and holds the same pipes
    above stdio as one spawned without a gate (what this process was given to pass on):
    neither end of the gate leaked through exec."""
    plain_ran = str(tmp_path / "plain")
    plain = spawn([sys.executable, "-c", SAYS_IT_RAN, plain_ran])
    try:
        inherited = until(lambda: os.path.exists(plain_ran) and Path(plain_ran).read_text(),
                          "the ungated program", 10.0)
    finally:
        signal_process(plain.ident, signal.SIGKILL)
        os.waitpid(plain.pid, 0)
        plain.close()
    ran = str(tmp_path / "ran")
    child = spawn([sys.executable, "-c", SAYS_IT_RAN, ran], gate=True)
    try:
        assert child.gated and identify(child.pid) == child.ident
        assert cmdline(child.pid) == cmdline(os.getpid())  # not exec'd: our own image
        assert not os.path.exists(ran)
        child.go()
        assert not child.gated
        fifos = until(lambda: os.path.exists(ran) and Path(ran).read_text(), "the program",
                      10.0)
        assert fifos == inherited, f"pipes leaked into the program: fds {fifos}"
        assert identify(child.pid) == child.ident  # exec keeps the identity
    finally:
        signal_process(child.ident, signal.SIGKILL)
        os.waitpid(child.pid, 0)
        child.close()


def test_a_gated_child_whose_parent_dies_before_go_never_runs(tmp_path: Path) -> None:
    """1. a middle process spawns a gated program and exits without go() (as a SIGKILLed
    guard would: the kernel closes its end); 2. the child is gone and the program never
    ran. Every backend: the gate needs no parent-death signal."""
    ran = str(tmp_path / "ran")
    out = _in_fresh_process(f"""
        import json, os, sys
        from mcp_tether.proc.spawn import spawn
        c = spawn([sys.executable, "-c", {SAYS_IT_RAN!r}, {ran!r}], gate=True)
        print(json.dumps([c.ident.pid, c.ident.start]), flush=True)
        os._exit(0)
    """)
    ident = ProcessId(int(out[0]), float(out[1]))  # type: ignore[index]
    assert wait_gone(ident, 30) is not None
    assert not os.path.exists(ran)


def test_a_gated_spawn_by_a_process_without_stdio_still_runs_its_program(
    tmp_path: Path,
) -> None:
    """1. a process with fds 0-2 closed (so the spawn's pipes take those numbers) spawns
    a gated program with its stdio on /dev/null; 2. go(): the program ran (the dup2 onto
    0-2 did not replace the gate's read end with /dev/null, whose EOF reads as the
    caller's death)."""
    ran, said = str(tmp_path / "ran"), str(tmp_path / "said.json")
    _in_fresh_process(f"""
        import json, os, sys
        from mcp_tether.proc.reap import exit_status, wait_child
        from mcp_tether.proc.spawn import spawn
        null, out = os.open(os.devnull, os.O_RDWR), os.dup(1)
        for fd in (0, 1, 2):
            os.close(fd)
        c = spawn([sys.executable, "-c", "import sys; open(sys.argv[1], 'w').close()",
                   {ran!r}], stdin=null, stdout=null, stderr=null, gate=True)
        c.go()
        status = exit_status(wait_child(c.pid))
        with open({said!r}, "w") as fh:
            json.dump(status, fh)
        os.dup2(out, 1)
        print("{{}}")
    """)
    assert json.loads(Path(said).read_text()) == 0 and os.path.exists(ran)


def test_a_gated_spawn_says_exec_errors_at_go_and_cancel_ends_it_unrun(
    tmp_path: Path,
) -> None:
    """1. a gated missing command: spawn returns, go() raises CommandNotFound (127) and
    has reaped it; 2. a gated program cancelled: reaped, exited unexec'd, never ran;
    3. no child left; go() and cancel() without a gate do nothing."""
    missing = spawn(["no-such-command-xyz"], gate=True)
    with pytest.raises(CommandNotFound) as nf:
        missing.go()
    assert nf.value.exit_code == 127 and missing.pidfd is None
    ran = str(tmp_path / "ran")
    cancelled = spawn([sys.executable, "-c", SAYS_IT_RAN, ran], gate=True)
    cancelled.cancel()
    assert compare(cancelled.ident) == DIFFERENT and not os.path.exists(ran)
    assert reap_children() == []
    plain = spawn([sys.executable, "-c", "pass"])
    plain.go()
    plain.cancel()
    assert exit_status(os.waitpid(plain.pid, 0)[1]) == 0
    plain.close()


@linux
@pytest.mark.requires_linux_backend("no PR_SET_PDEATHSIG: see "
                                    "test_the_portable_backend_says_what_it_cannot_do")
def test_a_spawned_child_with_pdeathsig_dies_with_its_parent() -> None:
    """1. a middle process spawns a sleeper with pdeathsig=SIGKILL and exits;
    2. the sleeper is gone (by the kernel's signal, not ours)."""
    out = _in_fresh_process(f"""
        import json, signal
        from mcp_tether.proc.spawn import spawn
        c = spawn({SLEEPER!r}, pdeathsig=signal.SIGKILL)
        print(json.dumps([c.ident.pid, c.ident.start]))
    """)
    ident = ProcessId(int(out[0]), float(out[1]))  # type: ignore[index]
    assert wait_gone(ident, 10) is not None


@linux
@pytest.mark.requires_linux_backend("no child subreaper: see "
                                    "test_the_portable_backend_says_what_it_cannot_do")
def test_subreaper_is_on_inside_and_as_before_after() -> None:
    out = _in_fresh_process("""
        import json
        from mcp_tether import platform
        seen = [platform.is_subreaper()]
        with platform.subreaper() as on:
            seen += [on, platform.is_subreaper()]
            with platform.subreaper():
                pass
            seen.append(platform.is_subreaper())
        seen.append(platform.is_subreaper())
        print(json.dumps(seen))
    """)
    assert out == [False, True, True, True, False]


HOPPER = r"""
import os, sys, time
marker, use_setsid = sys.argv[1], sys.argv[2] == "1"
open(marker, "w").close()
while True:  # fork, and the parent exits at once: the pid changes every hop
    if os.fork():
        os._exit(0)
    if use_setsid:
        os.setsid()
"""


@linux
@pytest.mark.requires_linux_backend(
    "no child subreaper: a hopper leaves the tree; see "
    "test_without_a_subreaper_a_double_forked_escapee_outlives_end_tree")
@pytest.mark.parametrize("use_setsid", ["0", "1"])
def test_end_tree_outlasts_a_pid_hopper_until_no_child_is_left(
    tmp_path: Path, use_setsid: str
) -> None:
    """1. a subreaper starts a hopper (forks and exits in a loop); 2. end_tree();
    3. no child left, and no process with the hopper's marker anywhere."""
    marker = str(tmp_path / "hopping")
    (tmp_path / "hopper.py").write_text(HOPPER)
    out = _in_fresh_process(f"""
        import json, os, sys, time
        from mcp_tether import platform
        from mcp_tether.proc.end import Tree, end_tree
        from mcp_tether.proc.reap import has_children
        from mcp_tether.proc.spawn import spawn
        with platform.subreaper():
            c = spawn([sys.executable, {str(tmp_path / 'hopper.py')!r}, {marker!r},
                       {use_setsid!r}])
            deadline = time.monotonic() + 10
            while not os.path.exists({marker!r}) and time.monotonic() < deadline:
                time.sleep(0.01)
            time.sleep(0.2)  # let it hop a few hundred times first
            tree = Tree(group=c.pid)
            result = end_tree(tree, term_grace=0.2, kill_wait=10)
            print(json.dumps({{"survived": result.survived, "left": has_children(),
                              "seen": len(tree.seen)}}))
    """)
    assert out["survived"] is False and out["left"] is False
    assert out["seen"] >= 1
    hoppers = [p for p in snapshot_pids() if marker in " ".join(cmdline(p))]
    assert hoppers == []


@linux
@pytest.mark.requires_linux_backend(
    "no child subreaper: a hopper leaves the tree; see "
    "test_without_a_subreaper_a_double_forked_escapee_outlives_end_tree")
def test_end_tree_outlasts_a_setsid_hopper_when_every_look_over_proc_is_slower_than_a_hop(
    tmp_path: Path,
) -> None:
    """1. a subreaper starts a hopper that calls setsid at every hop (so neither its group
    nor its zombie names the live hop); 2. every look reads the whole of /proc, and the
    listing is 50 ms old when it is read (a fake for the timing alone: a loaded machine or
    a namespace full of other hoppers, seen once in the suite beside 4 CPU burners);
    3. end_tree(): no child left, no process with the hopper's marker anywhere."""
    marker = str(tmp_path / "hopping")
    (tmp_path / "hopper.py").write_text(HOPPER)
    out = _in_fresh_process(f"""
        import json, os, sys, time
        from mcp_tether import platform
        from mcp_tether.proc import end
        from mcp_tether.proc.reap import has_children
        from mcp_tether.proc.spawn import spawn
        listing = end.backend.pids
        def stale_pids():
            pids = list(listing())
            time.sleep(0.05)
            return pids
        end.backend.pids = stale_pids
        end.FULL_SCAN_SPAN = 0  # no look by the pids handed out since the last one
        with platform.subreaper():
            c = spawn([sys.executable, {str(tmp_path / 'hopper.py')!r}, {marker!r}, "1"])
            deadline = time.monotonic() + 10
            while not os.path.exists({marker!r}) and time.monotonic() < deadline:
                time.sleep(0.01)
            tree = end.Tree(group=c.pid)
            result = end.end_tree(tree, term_grace=0.2, kill_wait=3)
            survived = result.survived
            if survived:  # the test's own clean-up, whatever the code under test did
                end.FULL_SCAN_SPAN, end.backend.pids = 4096, listing
                end.end_tree(end.Tree(), term_grace=0, kill_wait=30)
            print(json.dumps({{"survived": survived, "left": has_children()}}))
    """, timeout=120)
    assert out == {"survived": False, "left": False}
    hoppers = [p for p in snapshot_pids() if marker in " ".join(cmdline(p))]
    assert hoppers == []


def snapshot_pids() -> list[int]:
    return [int(n) for n in os.listdir("/proc") if n.isdigit()]


def test_pin_refuses_a_different_process_and_signals_only_its_own() -> None:
    p = subprocess.Popen(SLEEPER)
    try:
        real = identify(p.pid)
        assert real is not None
        assert pin(ProcessId(p.pid, real.start + 1)) is None
        pinned = pin(real)
        assert pinned is not None
        pinned.close()
        assert pinned.signal(signal.SIGKILL) == "gone"  # closed: sends nothing
        assert p.poll() is None
    finally:
        p.kill()
        p.wait()


@linux
@pytest.mark.requires_linux_backend("another process's fds cannot be read: see "
                                    "test_the_portable_backend_says_what_it_cannot_do")
def test_holds_tells_who_has_a_pipe_open_and_devnull_proves_nothing() -> None:
    """1. a child with the read end of our pipe on its stdin holds it, we hold it too,
    a child without it does not; 2. /dev/null has no key at all."""
    from mcp_tether.proc.fds import holds, stdio_key

    r, w = os.pipe()
    devnull = os.open(os.devnull, os.O_RDONLY)
    with_pipe = spawn(SLEEPER, stdin=r)
    without = spawn(SLEEPER, stdin=devnull)
    os.close(devnull)
    try:
        key = stdio_key(r)
        assert key is not None
        assert holds(with_pipe.pid, {key}) is True
        assert holds(without.pid, {key}) is False
        assert holds(os.getpid(), {key}) is True
        null = os.open(os.devnull, os.O_RDONLY)
        assert stdio_key(null) is None
        os.close(null)
    finally:
        for child in (with_pipe, without):
            pinned = pin(child.ident)
            if pinned is not None:
                with pinned:
                    pinned.signal(signal.SIGKILL)
            os.waitpid(child.pid, 0)
            child.close()
        os.close(r)
        os.close(w)


# -- the portable backend's weaker promises (docs/platforms.md) ---------------------------


def test_the_portable_backend_says_what_it_cannot_do() -> None:
    """The portable backend (psutil + POSIX), whichever backend this run chose:
    1. no pidfd, subreaper, parent-death signal, socket half-close event or front;
    2. who holds a pipe, and every channel answer, is unknown (None), never "nobody";
    3. its reading of a live child and of a zombie agrees with the kernel's family."""
    from mcp_tether._plat import portable

    r, w = os.pipe()
    child = spawn(SLEEPER, stdin=r)
    try:
        assert portable.pidfd_open(child.pid) is None
        assert portable.set_subreaper(True) is False and portable.is_subreaper() is False
        assert portable.set_pdeathsig(signal.SIGKILL) is False  # a no-op: nothing is set
        assert portable.SOCKET_HANGUP == 0 and portable.WATCHES_BEYOND_PARENT is False
        assert portable.last_pid() is None and portable.run_delay(child.pid) is None
        key = (os.fstat(r).st_dev, os.fstat(r).st_ino)
        assert portable.holds(child.pid, {key}) is None
        ch = portable.channels()
        assert ch.CHANNEL_DETAIL is False and ch.fd_ends(child.pid) is None
        end = End("pipe", "p", "p", "p", "r")
        look = ch.far_ends()
        assert look.far(child.pid, 0, end, "in").state == "unknown"
        assert look.holders("p", set()) == [] and ch.fd_state(child.pid, 0) is None
        rec = portable.read(child.pid)
        assert rec is not None and not rec.exited
        assert (rec.ppid, rec.pgid, rec.sid) == (os.getpid(), child.pid, child.pid)
        pinned = pin(child.ident)
        assert pinned is not None
        with pinned:
            assert pinned.signal(signal.SIGKILL) == "sent"

        def zombie() -> ProcRecord | None:
            z = portable.read(child.pid)
            assert z is not None, "the child vanished unreaped"
            return z if z.exited else None

        z = until(zombie, "the child to turn zombie", 10)
        assert z.ppid == os.getpid()
    finally:
        os.waitpid(child.pid, 0)
        child.close()
        os.close(r)
        os.close(w)


TREE = ("import subprocess, sys, time\n"
        "kid = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
        "print(kid.pid, flush=True)\n"
        "time.sleep(600)\n")


def test_without_a_subreaper_end_tree_ends_the_group_and_what_is_still_linked() -> None:
    """Group + scan (the portable strategy, any backend without the subreaper flag):
    1. a server in its own group with a child; 2. end_tree(); 3. both gone, none left."""
    from mcp_tether.proc.end import Tree, end_tree
    from mcp_tether.proc.reap import poll_child

    r, w = os.pipe()
    c = spawn([sys.executable, "-c", TREE], stdout=w)
    os.close(w)
    with os.fdopen(r) as fh:
        kid = identify(int(fh.readline()))
    assert kid is not None
    tree = Tree(group=c.pid)
    tree.note(platform.backend.read(c.pid))  # type: ignore[arg-type]
    assert tree.exact is platform.is_subreaper()
    result = end_tree(tree, term_grace=0.5, kill_wait=10)
    assert result.survived is False
    assert compare(c.ident) == DIFFERENT and compare(kid) == DIFFERENT
    # Reaped, not left a zombie. (Not has_children(): this pytest process may still have
    # another test's child on its way out; it failed so once in CI.)
    with pytest.raises(ChildProcessError):
        poll_child(c.pid)
    c.close()


ESCAPER = ("import os, sys, time\n"
           "if os.fork() == 0:\n"
           "    os.setsid()\n"
           "    if os.fork() == 0:\n"
           "        print(os.getpid(), flush=True)\n"
           "        time.sleep(600)\n"
           "    os._exit(0)\n"
           "time.sleep(600)\n")


def test_without_a_subreaper_a_double_forked_escapee_outlives_end_tree() -> None:
    """The documented limit of group + scan (macOS has no subreaper): 1. a server whose
    grandchild double-forks out of its group and session; 2. end_tree() ends the server;
    3. the escapee is still alive (this test then ends it, by identity)."""
    from mcp_tether.proc.end import Tree, end_tree

    r, w = os.pipe()
    c = spawn([sys.executable, "-c", ESCAPER], stdout=w)
    os.close(w)
    with os.fdopen(r) as fh:
        escapee = identify(int(fh.readline()))
    assert escapee is not None

    def reparented() -> bool:  # or gone: what follows says so
        info = platform.backend.read(escapee.pid)
        return info is None or info.ppid == 1

    until(reparented, "the escapee to be reparented to init", 10)
    try:
        tree = Tree(group=c.pid)
        assert tree.exact is False
        result = end_tree(tree, term_grace=0.5, kill_wait=10)
        assert result.survived is False  # nothing it can see is left
        assert compare(c.ident) == DIFFERENT
        assert compare(escapee) == SAME  # out of its sight: not ended
    finally:
        signal_process(escapee, signal.SIGKILL)
        wait_gone(escapee, 10)
        c.close()


def test_an_environment_unreadable_at_one_look_is_read_again_at_the_next(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a subreaper a daemon is the tree's by the mark in its environment. An
    environment that cannot be read at one look (seen for a daemon 3 ms old, and under
    load) is no answer: the next look reads it again and finds the mark; one unreadable
    at two looks (another user's) counts as unmarked from then on. The reads are a fake
    (what they return is the point, and a real read may itself fail under load)."""
    from mcp_tether.proc import end, mark
    from mcp_tether.proc.identity import read_info

    tok = mark.token(1, 1.0)
    c = subprocess.Popen(SLEEPER)
    try:
        info = read_info(c.pid)
        assert info is not None
        fds = end.backend.channels()  # the backend the tree reads through (bound at import)
        misses = {"n": 1}

        def flaky(pid: int) -> dict[str, str] | None:
            if misses["n"] > 0:
                misses["n"] -= 1
                return None
            return {mark.TREE: tok} if pid == c.pid else None

        monkeypatch.setattr(fds, "environ", flaky)
        tree = end.Tree(marks=(tok,))
        assert tree.marked(info) is False  # unreadable: no answer yet
        assert tree.marked(info) is True  # read again: the mark
        misses["n"] = 2
        other = end.Tree(marks=(tok,))
        assert other.marked(info) is False and other.marked(info) is False
        assert other.marked(info) is False  # two misses: decided, not read again
    finally:
        c.kill()
        c.wait()
