"""The platform seam's contract (`_plat/contract.py`): every backend answers the same
questions with the same signatures, none answers one the contract does not ask, and
each answers in the contract's types; the portable one says "unknown" (None) where it
cannot see, never "nothing".

Each backend module is called directly, whichever backend this run chose: the portable
one needs only psutil and POSIX, the darwin one runs against the simulated libproc
(`_plat/darwin_sim.py`), so all three are checked on Linux.
"""

from __future__ import annotations

import inspect
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from mcp_tether._plat import contract, darwin, darwin_libproc, darwin_sim, portable
from mcp_tether._plat.ends import End, Far, FdState
from mcp_tether._plat.record import ProcRecord

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux /proc")
# Public functions a backend has beyond the contract, each with why.
EXTRAS = {"darwin": {"bind"}}  # platform.py points its calls at the simulation


def _functions(module: ModuleType) -> set[str]:
    return {n for n, v in vars(module).items()
            if not n.startswith("_") and inspect.isfunction(v) and v.__module__ == module.__name__}


def _members(proto: type) -> tuple[dict[str, inspect.Signature], dict[str, Any]]:
    """The protocol's methods (their signatures without self) and its data members."""
    methods = {n: inspect.signature(v).replace(
                   parameters=list(inspect.signature(v).parameters.values())[1:])
               for n, v in vars(proto).items() if inspect.isfunction(v) and not n.startswith("_")}
    data = {n: t for n, t in proto.__annotations__.items() if n not in methods}
    return methods, data


def _shape(sig: inspect.Signature) -> list[tuple[str, Any, Any, str]]:
    """A signature's parameters: names, kinds, defaults and annotations (as text). What a
    backend returns may be narrower than the contract's type (None for "cannot know"
    everywhere): return types are the type checker's (`platform.backend: Backend`)."""
    def text(a: object) -> str:
        return str(a).replace(" ", "").replace("'", "")

    return [(p.name, p.kind, p.default, text(p.annotation)) for p in sig.parameters.values()]


def _backends() -> list[tuple[str, ModuleType, ModuleType]]:
    """(name, backend module, its channels module) for every backend checkable here."""
    out = [("portable", portable, portable.channels()),
           ("darwin", darwin, darwin.channels())]
    if sys.platform.startswith("linux"):
        from mcp_tether._plat import linux

        out.append(("linux", linux, linux.channels()))
    return out


BACKENDS = _backends()


def _check(obj: Any, proto: type, where: str) -> None:
    methods, data = _members(proto)
    for name, want in methods.items():
        got = getattr(obj, name, None)
        assert callable(got), f"{where} lacks {name}()"
        sig = inspect.signature(got)
        if inspect.isclass(obj):  # a class's methods: compare without self
            sig = sig.replace(parameters=list(sig.parameters.values())[1:])
        assert _shape(sig) == _shape(want), f"{where}.{name}{sig} is not the contract's {want}"
    for name, kind in data.items():
        assert hasattr(obj, name), f"{where} lacks {name}"
        assert isinstance(getattr(obj, name), {"bool": bool, "int": int, "str": str}[kind]), name


@pytest.mark.parametrize(("name", "module", "channels"), BACKENDS, ids=[b[0] for b in BACKENDS])
def test_every_backend_keeps_the_contract_signatures_included(
        name: str, module: ModuleType, channels: ModuleType) -> None:
    """Every member of `Backend`, `Channels` and `FarEnds`, with the contract's parameter
    names, kinds, defaults and annotations."""
    _check(module, contract.Backend, name)
    _check(channels, contract.Channels, f"{name} channels")
    _check(channels.FarEnds, contract.FarEnds, f"{name} FarEnds")


@pytest.mark.parametrize(("name", "module", "channels"), BACKENDS, ids=[b[0] for b in BACKENDS])
def test_no_backend_answers_a_question_the_contract_does_not_ask(
        name: str, module: ModuleType, channels: ModuleType) -> None:
    """A question only one backend answers is a caller testing which backend it has."""
    asked = set(_members(contract.Backend)[0]) | set(_members(contract.Channels)[0])
    extra = (_functions(module) | _functions(channels)) - asked - EXTRAS.get(name, set())
    assert not extra, f"{name} answers {sorted(extra)}, which the contract does not ask"


@pytest.fixture
def simulated() -> Iterator[None]:
    """The darwin backend's libproc answered from /proc (then the earlier binding)."""
    before, cached = list(darwin_libproc._loader), list(darwin_libproc._api)
    darwin.bind(darwin_sim.load)
    yield
    darwin_libproc._loader[:], darwin_libproc._api[:] = before, cached


@linux_only
@pytest.mark.parametrize(("name", "module", "channels"), BACKENDS, ids=[b[0] for b in BACKENDS])
def test_every_backend_answers_in_the_contracts_types(
        name: str, module: ModuleType, channels: ModuleType, simulated: None) -> None:
    """Each question asked of a live child (on pipes of ours) gets an answer of the type
    the contract says, or None where it says "cannot know"."""
    r, w = os.pipe()
    spare_r, spare_w = os.pipe()
    child = subprocess.Popen([sys.executable, "-c", "import signal; print('up', flush=True); "
                              "signal.pause()"], stdin=r, stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline() == b"up\n"  # exec'd
    me = os.getpid()
    try:
        rec = module.read(child.pid)
        assert isinstance(rec, ProcRecord) and rec.pid == child.pid and rec.ppid == me
        assert isinstance(module.read_record(child.pid, None), ProcRecord)
        assert child.pid in module.pids() and isinstance(module.clock(), float)
        assert isinstance(module.read_argv(child.pid), list)
        assert isinstance(module.read_link(child.pid, "cwd"), str)
        assert module.children(me) is None or child.pid in module.children(me)
        key, other = module.stdio_key(r), module.stdio_key(spare_r)
        assert key is None or module.holds(child.pid, {key}) in (None, True)
        assert other is None or module.holds(child.pid, {other}) in (None, False)
        assert key is None or module.holds(me, {key}) in (None, True)
        fd = module.exit_fd(child.pid)
        assert fd is None or isinstance(fd, int)
        if fd is not None:
            os.close(fd)
        ends = channels.fd_ends(child.pid)
        assert ends is None or all(isinstance(e, End) for e in ends.values())
        assert ends is None or ends[0].kind == "pipe"
        state = channels.fd_state(child.pid, 0)
        assert state is None or (isinstance(state, FdState) and state.access == "r")
        look = channels.far_ends()
        try:
            far = look.far(child.pid, 0, ends[0], "in") if ends else None
            assert far is None or (isinstance(far, Far) and far.state == "open")
            assert isinstance(look.holders(far.id if far and far.id else "x", set()), list)
        finally:
            look.close()
        env = channels.environ(child.pid)
        assert env is None or env.get("PATH") == os.environ.get("PATH")
        assert channels.io_counters(child.pid) is None or len(channels.io_counters(child.pid)) == 4
    finally:
        child.kill()
        child.wait()
        child.stdout.close()
        for fd in (r, w, spare_r, spare_w):
            os.close(fd)


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
