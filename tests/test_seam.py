"""The platform seam's contract: both backends answer the same questions, and the
portable one says "unknown" (None) where it cannot see, never "nothing".

Each backend module is called directly (the portable one needs only psutil and POSIX,
so it runs on Linux too), whichever backend this run chose.
"""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
from types import ModuleType

import pytest

from mcp_tether._plat import portable

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")


def _functions(module: ModuleType) -> set[str]:
    return {n for n, v in vars(module).items()
            if not n.startswith("_") and inspect.isfunction(v) and v.__module__ == module.__name__}


@linux_only
def test_both_backends_answer_the_same_questions() -> None:
    """Every question the Linux backend (and its channel module) answers, the portable
    one answers too: a caller never tests which backend it has."""
    from mcp_tether._plat import linux, linux_fds

    assert _functions(linux) | _functions(linux_fds) <= _functions(portable) | {"load"}


@pytest.fixture
def sleeper() -> subprocess.Popen[bytes]:
    """A child that ignores SIGTERM and runs a second thread, on pipes of ours."""
    code = ("import signal, threading, time; signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "threading.Thread(target=time.sleep, args=(60,)).start()\n"
            "print('up', flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    assert p.stdout is not None and p.stdout.readline() == b"up\n"
    yield p
    p.kill()
    p.wait()
    for f in (p.stdin, p.stdout):
        assert f is not None
        f.close()


@linux_only
def test_the_linux_backend_reads_what_a_process_is_doing(
        sleeper: subprocess.Popen[bytes]) -> None:
    """Signal masks, threads (main first), pid namespace, mapped files, cgroup."""
    from mcp_tether._plat import linux

    masks = linux.signal_masks(sleeper.pid)
    assert masks is not None and masks["ignored"] >> (signal.SIGTERM - 1) & 1
    got = linux.threads(sleeper.pid) or []
    assert len(got) == 2 and got[0][0] == sleeper.pid and got[1][0] > sleeper.pid
    assert linux.threads(sleeper.pid, 1) == got[:1] and got[0][1].startswith("py")
    assert linux.pid_namespace(sleeper.pid) == linux.pid_namespace(os.getpid()) is not None
    files, where = linux.mapped_files(sleeper.pid) or ([], "")
    assert where == f"/proc/{sleeper.pid}/maps" and any("python" in f for f in files)
    assert linux.cgroup(sleeper.pid) is not None
    assert linux.signal_masks(2**22 + 1) is None and linux.threads(2**22 + 1) is None


@linux_only
def test_reopen_gives_a_fresh_end_of_our_own_pipe() -> None:
    from mcp_tether._plat import linux

    r, w = os.pipe()
    try:
        w2 = linux.reopen(r, write=True)
        assert w2 is not None
        os.write(w2, b"x")
        os.close(w2)
        assert os.read(r, 1) == b"x"
    finally:
        os.close(r)
        os.close(w)


def test_the_portable_backend_says_unknown_where_it_cannot_see(
        sleeper: subprocess.Popen[bytes]) -> None:
    """None, never an empty answer that would read as "nothing there"."""
    pid = sleeper.pid
    for answer in (portable.signal_masks(pid), portable.wait_channel(pid),
                   portable.threads(pid), portable.pid_namespace(pid), portable.cgroup(pid),
                   portable.cgroup_memory(pid), portable.reopen(0, write=True)):
        assert answer is None


def test_evidence_under_the_portable_backend_says_nothing_about_fds(
        sleeper: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch) -> None:
    """The process is seen (psutil), its fds and signal masks are not: `holds_wire` is
    None (unknown), not False."""
    from mcp_tether import platform
    from mcp_tether.probe.evidence import collect, stdio_links

    monkeypatch.setattr(platform, "backend", portable)
    assert stdio_links(sleeper.pid) == []
    ev = collect(sleeper.pid, ["pipe:[1]"])
    assert ev["alive"] and ev["comm"] and ev["cmdline"][0] == sys.executable
    assert ev["holds_wire"] is None and ev["fds"] == {} and ev["sig_ignored"] == []
