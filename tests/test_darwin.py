"""The darwin backend, proven without a Mac: its structures against the header, its
parsers on macOS's byte layouts, and its logic against real processes through the
simulated libproc (`_plat/darwin_sim.py`), down to the machine view's verdicts.

Nothing here ran on macOS. What runs is the darwin module's own code (its checked calls,
its handle matching, its exit wait); only the system calls are answered from /proc.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp_tether import platform
from mcp_tether._plat import darwin, darwin_fds, darwin_libproc, darwin_sim
from mcp_tether._plat import darwin_libproc as abi
from mcp_tether._plat.ends import CLOSED, OPEN, UNCONNECTED
from mcp_tether.proc import SAME, compare, identify, wait_gone
from polling import until
from scan_lab import (
    DEADLINE,
    READER_HOST,
    READER_SERVER,
    Lab,
    assert_consistent,
    needs_proc,
)

# ----- 1. the structures, field by field against bsd/sys/proc_info.h -----------------------
# Sizes and offsets the C compiler gives the header's declarations (xnu-11417.101.15) on
# an LP64 target (macOS x86_64 and arm64 lay these out alike: 8-byte aligned 64-bit
# fields, no packing). Each line names the struct's line in bsd/sys/proc_info.h.
LAYOUT = {
    # struct proc_bsdinfo, :59-82 (PROC_PIDTBSDINFO_SIZE)
    abi.proc_bsdinfo: (136, {"pbi_flags": 0, "pbi_status": 4, "pbi_ppid": 16, "pbi_uid": 20,
                             "pbi_comm": 48, "pbi_name": 64, "pbi_pgid": 100,
                             "pbi_start_tvsec": 120, "pbi_start_tvusec": 128}),
    # struct proc_bsdshortinfo, :85-99
    abi.proc_bsdshortinfo: (64, {"pbsi_pgid": 8, "pbsi_status": 12, "pbsi_comm": 16,
                                 "pbsi_uid": 36}),
    # struct proc_taskinfo, :127-146 (PROC_PIDTASKINFO_SIZE)
    abi.proc_taskinfo: (96, {"pti_resident_size": 8, "pti_total_user": 16,
                             "pti_total_system": 24, "pti_syscalls_unix": 76,
                             "pti_threadnum": 84, "pti_numrunning": 88}),
    # struct proc_fileinfo, :251-257
    abi.proc_fileinfo: (24, {"fi_openflags": 0, "fi_status": 4, "fi_offset": 8,
                             "fi_type": 16}),
    # struct vinfo_stat, :288-310
    abi.vinfo_stat: (136, {"vst_ino": 8, "vst_size": 88, "vst_rdev": 116}),
    # struct vnode_info, :312-317; vnode_info_path, :319-322
    abi.vnode_info: (152, {"vi_fsid": 144}),
    abi.vnode_info_path: (1176, {"vip_path": 152}),
    # struct vnode_fdinfowithpath, :329-332 (PROC_PIDFDVNODEPATHINFO_SIZE)
    abi.vnode_fdinfowithpath: (1200, {"pvip": 24}),
    # struct proc_vnodepathinfo, :345-348 (PROC_PIDVNODEPATHINFO_SIZE)
    abi.proc_vnodepathinfo: (2352, {"pvi_rdir": 1176}),
    # struct in_sockinfo, :372-400; tcp_sockinfo, :425-433; un_sockinfo, :440-451
    abi.in_sockinfo: (80, {}),
    abi.tcp_sockinfo: (120, {}),
    abi.un_sockinfo: (528, {"unsi_conn_pcb": 8, "unsi_addr": 16, "unsi_caddr": 271}),
    # struct sockbuf_info, :515-523
    abi.sockbuf_info: (24, {}),
    # struct socket_info, :536-565
    abi.socket_info: (768, {"soi_so": 136, "soi_pcb": 144, "soi_type": 152,
                            "soi_family": 160, "soi_state": 168, "soi_rcv": 184,
                            "soi_snd": 208, "soi_kind": 232, "soi_proto": 240}),
    # struct socket_fdinfo, :567-570 (PROC_PIDFDSOCKETINFO_SIZE)
    abi.socket_fdinfo: (792, {"psi": 24}),
    # struct pipe_info, :598-604; pipe_fdinfo, :606-609 (PROC_PIDFDPIPEINFO_SIZE)
    abi.pipe_info: (160, {"pipe_handle": 136, "pipe_peerhandle": 144, "pipe_status": 152}),
    abi.pipe_fdinfo: (184, {"pipeinfo": 24}),
    # struct proc_fdinfo, :673-676 (PROC_PIDLISTFD_SIZE)
    abi.proc_fdinfo: (8, {"proc_fd": 0, "proc_fdtype": 4}),
}


@pytest.mark.parametrize("kind", list(LAYOUT), ids=lambda k: k.__name__)
def test_each_structure_has_the_headers_size_and_offsets(kind: Any) -> None:
    size, offsets = LAYOUT[kind]
    assert ctypes.sizeof(kind) == size
    for field, offset in offsets.items():
        assert getattr(kind, field).offset == offset, field


def test_the_fields_read_through_nested_structures_sit_where_the_kernel_writes_them() -> None:
    """Byte offsets from the start of what libproc copies out, for the fields the
    backend decides on (pipe handles, the socket's peer and state, the cwd's path)."""
    def at(kind: Any, *path: str) -> int:
        off, cur = 0, kind
        for name in path:
            f = getattr(cur, name)
            off += f.offset
            cur = dict(cur._fields_)[name]
        return off

    assert at(abi.pipe_fdinfo, "pipeinfo", "pipe_peerhandle") == 168
    assert at(abi.socket_fdinfo, "psi", "soi_state") == 192
    assert at(abi.socket_fdinfo, "psi", "soi_proto") + at(abi.un_sockinfo, "unsi_conn_pcb") \
        == 272
    assert at(abi.proc_vnodepathinfo, "pvi_cdir", "vip_path") == 152


def test_the_constants_are_the_headers() -> None:
    """Values as bsd/sys/*.h define them (the module names each line); on a Mac also as
    Python's select module has them."""
    assert (abi.PROC_PIDLISTFDS, abi.PROC_PIDTBSDINFO, abi.PROC_PIDTASKINFO) == (1, 3, 4)
    assert (abi.PROC_PIDFDVNODEPATHINFO, abi.PROC_PIDFDSOCKETINFO, abi.PROC_PIDFDPIPEINFO) \
        == (2, 3, 6)
    assert (abi.PROX_FDTYPE_VNODE, abi.PROX_FDTYPE_SOCKET, abi.PROX_FDTYPE_PIPE) == (1, 2, 6)
    assert (abi.SOCKINFO_UN, abi.SOI_S_CANTRCVMORE, abi.PIPE_EOF) == (3, 0x20, 0x80)
    assert (abi.CTL_KERN, abi.KERN_PROCARGS2, abi.SZOMB) == (1, 49, 5)
    if hasattr(select, "KQ_FILTER_PROC"):  # macOS
        assert abi.EVFILT_PROC == select.KQ_FILTER_PROC
        assert abi.NOTE_EXIT == select.KQ_NOTE_EXIT and abi.EV_ADD == select.KQ_EV_ADD


# ----- 2. KERN_PROCARGS2's layout -------------------------------------------------------------


def _procargs(argv: list[bytes], env: list[bytes], exe: bytes = b"/bin/x",
              apple: list[bytes] | None = None) -> bytes:
    def aligned(b: bytes) -> bytes:
        return b + b"\0" * (-len(b) % 8)

    body = aligned(exe + b"\0") + aligned(b"".join(a + b"\0" for a in argv + env))
    body += b"".join(a + b"\0" for a in apple or [b"ptr_munge=", b"th_port=0x103"])
    return len(argv).to_bytes(4, sys.byteorder) + body


def test_argv_and_the_environment_are_read_from_macoss_layout() -> None:
    raw = _procargs([b"node", b"", b"server.js"], [b"A=1", b"B=x=y"])
    assert abi.parse_procargs(raw) == (["node", "", "server.js"], {"A": "1", "B": "x=y"})


def test_apple_strings_after_padding_are_not_the_environment() -> None:
    """NUL padding after the environment ends it; where no padding was needed, Apple's
    strings read as variables too (a superset, said in the parser's docstring)."""
    padded = _procargs([b"x"], [b"A=1"])  # 2 + 4 bytes: padded to 8
    assert abi.parse_procargs(padded) == (["x"], {"A": "1"})
    unpadded = _procargs([b"x"], [b"AB=1234"])  # 2 + 8 = 10: padded too...
    assert "ptr_munge" not in (abi.parse_procargs(unpadded) or ([], {}))[1]  # type: ignore[operator]
    exact = _procargs([b"abcdefg"], [b"A=34567"])  # 8 + 8 bytes: no padding at all
    got = abi.parse_procargs(exact)
    assert got is not None and got[1] is not None and got[1]["A"] == "34567"


def test_an_omitted_environment_is_unknown_and_a_short_answer_malformed() -> None:
    assert abi.parse_procargs(_procargs([b"x"], [], apple=[])) == (["x"], None)
    assert abi.parse_procargs(b"\x05\x00") is None
    assert abi.parse_procargs((9).to_bytes(4, sys.byteorder) + b"/bin/x\0\0a\0") is None


# ----- 3. the darwin module on real processes, its calls answered from /proc ----------------


@pytest.fixture
def sim() -> Iterator[None]:
    """The darwin backend's calls answered by the simulation, whichever backend this run
    chose; the previous binding back afterwards."""
    before, cached = list(darwin_libproc._loader), list(darwin_libproc._api)
    darwin.bind(darwin_sim.load)
    yield
    darwin_libproc._loader[:], darwin_libproc._api[:] = before, cached


def _child(**kw: Any) -> subprocess.Popen[bytes]:
    code = "import signal; print('up', flush=True); signal.pause()"
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, **kw)
    assert p.stdout is not None and p.stdout.readline() == b"up\n"
    return p


def _end(p: subprocess.Popen[bytes]) -> None:
    p.kill()
    p.wait()
    if p.stdout is not None:
        p.stdout.close()


@needs_proc
def test_a_process_reads_as_on_linux_with_its_identity_in_seconds(sim: None) -> None:
    """Parent, group, session, state and argv agree with the Linux backend's reading;
    the start is seconds since the epoch and stays the same on every reading."""
    from mcp_tether._plat import linux

    p = _child(start_new_session=True, env={**os.environ, "MCP_TETHER_SIM_PROBE": "yes"})
    try:
        d, lx = darwin.read(p.pid), linux.read_record(p.pid, None)
        assert d is not None and lx is not None
        assert (d.pid, d.ppid, d.pgid, d.sid) == (lx.pid, lx.ppid, lx.pgid, lx.sid)
        assert not d.argv_read and darwin.read_argv(p.pid) == lx.argv == d.argv
        assert d.comm == lx.comm and d.state in ("S", "R") and d.rss_bytes > 0
        again = darwin.read(p.pid)
        assert again is not None and again.start == d.start
        assert abs(darwin.age_seconds(d.start, None, 100) - linux.age_seconds(
            lx.start, None, os.sysconf("SC_CLK_TCK"))) < 1.5
        assert darwin_fds.environ(p.pid)["MCP_TETHER_SIM_PROBE"] == "yes"  # type: ignore[index]
        assert p.pid in (darwin.children(os.getpid()) or [])
        assert darwin.owner(p.pid) == os.geteuid() and darwin.is_process(p.pid)
        assert darwin.read_link(p.pid, "exe") == os.path.realpath(sys.executable)
        assert darwin.read_link(p.pid, "cwd") == os.getcwd()
    finally:
        _end(p)


@needs_proc
def test_a_zombie_is_read_only_where_the_kernel_gives_zombies_and_a_gone_pid_is_none(
        sim: None) -> None:
    p = _child()
    p.kill()
    until(lambda: (darwin.read(p.pid) or darwin.read(os.getpid())).state == "Z",  # type: ignore[union-attr]
          "the child to be a zombie", DEADLINE)
    rec = darwin.read(p.pid)
    assert rec is not None and rec.exited and rec.ppid == os.getpid()
    assert darwin.read_record(p.pid, None) is None  # live processes only
    assert darwin.is_process(p.pid) and p.pid in (darwin.children(os.getpid()) or [])
    p.wait()
    assert p.stdout is not None
    p.stdout.close()
    assert darwin.read(p.pid) is None and darwin.read_argv(p.pid) is None
    with pytest.raises(ProcessLookupError):
        darwin.exit_fd(p.pid)


@needs_proc
def test_another_users_process_is_unreadable_never_gone(
        sim: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """libproc answers the same user only (EPERM; KERN_PROCARGS2 says EINVAL): read
    raises PermissionError, fds and the environment are unknown, argv empty."""
    p = _child()
    me = os.geteuid()
    try:
        monkeypatch.setattr(darwin_sim.os, "geteuid", lambda: 4242)
        with pytest.raises(PermissionError):
            darwin.read(p.pid)
        assert darwin_fds.fd_ends(p.pid) is None and darwin_fds.environ(p.pid) is None
        assert darwin.read_argv(p.pid) == [] and darwin.owner(p.pid) == me
        table: dict[int, Any] = {}
        assert darwin.fill(table, None) >= 1 and p.pid not in table
    finally:
        _end(p)


@needs_proc
def test_each_pipe_end_has_its_own_handle_and_its_peer_is_zero_once_every_holder_closed(
        sim: None) -> None:
    """1. a pipe: the read end's far end is the write end's handle, and the reverse;
    2. our write end closed while a child still holds a copy: still open, held by it;
    3. the child gone: the peer handle is 0 and PIPE_EOF is set on the survivor."""
    r, w = os.pipe()
    me = os.getpid()
    child = _child(pass_fds=[w])
    try:
        ends = darwin_fds.fd_ends(me, only=(r, w)) or {}
        assert ends[r].id != ends[w].id and ends[r].channel == ends[w].channel
        look = darwin_fds.far_ends()
        assert look.far(me, r, ends[r], "in").id == ends[w].id
        assert look.far(me, w, ends[w], "out").id == ends[r].id
        os.close(w)
        far = look.far(me, r, ends[r], "in")
        assert far.state == OPEN and far.id == ends[w].id
        assert look.holders(far.id, set()) == [child.pid]
        _end(child)
        assert look.far(me, r, ends[r], "in").state == CLOSED
        raw = abi.api().fdinfo(me, r, abi.PROC_PIDFDPIPEINFO, abi.pipe_fdinfo)
        assert raw.pipeinfo.pipe_peerhandle == 0 and raw.pipeinfo.pipe_status & abi.PIPE_EOF
    finally:
        os.close(r)
        if child.poll() is None:
            _end(child)


@needs_proc
def test_a_unix_sockets_peer_is_its_pcb_a_half_close_shows_and_a_listener_is_no_channel(
        sim: None) -> None:
    a, b = socket.socketpair()
    me = os.getpid()
    listener = socket.socket(socket.AF_UNIX)
    try:
        ends = darwin_fds.fd_ends(me, only=(a.fileno(), b.fileno(), listener.fileno())) or {}
        look = darwin_fds.far_ends()
        far = look.far(me, a.fileno(), ends[a.fileno()], "in")
        assert (far.state, far.id, far.recv, far.send) == (OPEN, ends[b.fileno()].id, True,
                                                            True)
        b.shutdown(socket.SHUT_WR)  # SOI_S_CANTRCVMORE on a
        far = look.far(me, a.fileno(), ends[a.fileno()], "in")
        assert (far.state, far.recv, far.send) == (OPEN, False, True)
        b.close()
        assert look.far(me, a.fileno(), ends[a.fileno()], "in").state == CLOSED
        lst = look.far(me, listener.fileno(), ends[listener.fileno()], "in")
        assert lst.state == UNCONNECTED
    finally:
        for s in (a, b, listener):
            s.close()


@needs_proc
def test_a_copy_of_an_fd_is_the_same_open_file_and_close_on_exec_is_the_fds_own(
        sim: None) -> None:
    me = os.getpid()
    fd = os.open(os.devnull, os.O_RDONLY)
    dup = os.dup(fd)  # non-inheritable: close-on-exec
    os.set_inheritable(fd, True)
    try:
        a, b = darwin_fds.fd_state(me, fd), darwin_fds.fd_state(me, dup)
        assert a is not None and b is not None and a.file == b.file
        assert (a.access, a.cloexec, b.cloexec) == ("r", False, True)
        assert (darwin_fds.fd_ends(me, only=(fd,)) or {})[fd].kind == "null"
    finally:
        os.close(fd)
        os.close(dup)


@needs_proc
def test_the_kqueue_exit_wait_turns_readable_at_the_exit_and_not_before(sim: None) -> None:
    p = _child()
    fd = darwin.exit_fd(p.pid)
    assert fd is not None
    try:
        assert select.select([fd], [], [], 0)[0] == []
        p.kill()
        assert select.select([fd], [], [], DEADLINE)[0] == [fd]
    finally:
        os.close(fd)
        _end(p)


def test_pid_1_is_the_machines_init_when_it_is_launchd_and_unknown_otherwise(
        sim: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS has no pid namespaces: its pid 1, launchd, adopts orphans. A pid 1 that is
    not launchd (the simulation in a pid namespace) leaves the scan to judge it by name."""
    def pid1(comm: bytes) -> Any:
        got = abi.proc_bsdshortinfo()
        got.pbsi_pid, got.pbsi_comm = 1, comm
        return lambda pid, flavor, arg, kind: got

    api = abi.api()
    monkeypatch.setattr(api, "pidinfo", pid1(b"launchd"))
    assert darwin_fds.root_pid_namespace() is True
    monkeypatch.setattr(api, "pidinfo", pid1(b"bash"))
    assert darwin_fds.root_pid_namespace() is None


# ----- 4. the machine view: the same verdicts as the Linux backend, on a mess -------------

PROXY = """\
import subprocess, sys, threading
if False:
    import mcp
child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
def up():
    for line in iter(sys.stdin.buffer.readline, b""):
        child.stdin.write(line); child.stdin.flush()
threading.Thread(target=up, daemon=True).start()
for line in iter(child.stdout.readline, b""):
    sys.stdout.buffer.write(line); sys.stdout.flush()
"""

def _cli(backend: str, *argv: str) -> dict[str, Any]:
    env = {**os.environ, platform.ENV: backend}
    r = subprocess.run([sys.executable, "-m", "mcp_tether", *argv], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    doc: dict[str, Any] = json.loads(r.stdout)
    return doc


def _ppid(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


@needs_proc
@pytest.mark.skipif(platform.BACKEND != "linux", reason="compares both backends itself")
def test_ps_on_the_simulated_libproc_gives_every_row_the_linux_backends_state_and_reap_ends_the_leaks(  # noqa: E501
    lab: Lab,
) -> None:
    """1. a mess of real processes: two servers whose client died (pipes; a socketpair),
    a live pair, a live proxy before its server, a server whose host half-closed its
    socket and still reads it, a leak whose input a live helper still holds, one whose
    output a container engine's shim reads, and a bystander;
    2. `ps --json` under MCP_TETHER_BACKEND=linux and =darwin-sim: the same rows, each in
    the same state with the same evidence;
    3. `reap --yes` on darwin-sim ends exactly the rows both call leaked: the unknown,
    live and held ones and the bystander live on."""
    leaked = [lab.pair().orphan(), lab.pair(socket=True).orphan()]
    live = lab.pair()
    proxy = lab.pair([sys.executable, str(lab.script("proxy/mcp-proxy.py", PROXY)),
                      sys.executable, str(lab.fake_server("mcp-server-behind.py"))])
    held = lab.pair(leak_writer=True)
    held_server = held.orphan()
    host = lab.popen([sys.executable, str(lab.script("reader_host.py", READER_HOST)),
                      "one-socketpair", str(lab.script("notes/mcp-server-notes.py",
                                                       READER_SERVER)),
                      str(lab.tmp / "count")], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE)
    assert host.stdout is not None
    half = identify(int(host.stdout.readline()))
    shim, shimmed = lab.shimmed_server()
    bystander = lab.popen([sys.executable, "-c", "import signal; signal.pause()"])
    assert half is not None
    lab.started.append(half)
    until(lambda: _ppid(half.pid) == 1, "the half-closed server to be adopted", DEADLINE)

    docs = {b: _cli(b, "ps", "--json") for b in ("linux", "darwin-sim")}
    rows = {}
    for b, doc in docs.items():
        assert_consistent(doc)
        rows[b] = {s["pid"]: (s["state"], sorted(s["evidence"])) for s in doc["results"]}
    assert rows["darwin-sim"] == rows["linux"]
    got = rows["linux"]
    for ident in leaked:
        assert got[ident.pid][0] == "leaked", got
    assert got[held_server.pid] == ("live", ["parent-gone", "stdout-no-reader",
                                             "writer-held"]), got
    assert got[half.pid][0] == "live" and "reader-held" in got[half.pid][1], got
    assert got[shimmed.pid][0] == "unknown", got
    assert got[live.server.pid] == ("live", []), got
    behind = [pid for pid, (state, _) in got.items() if pid not in (
        live.server.pid, held_server.pid, half.pid, shimmed.pid) and state == "live"]
    assert behind, got  # the proxy's server (or the proxy itself, as a live entry)
    assert {p for p, (s, _) in got.items() if s == "leaked"} == {i.pid for i in leaked}

    done = _cli("darwin-sim", "reap", "--yes", "--include", "guess", "--include", "stdio",
                "--json", "--grace", "3")
    assert sorted(r["pid"] for r in done["results"]) == sorted(i.pid for i in leaked)
    assert all(r["outcome"] == "ended" for r in done["results"]), done
    for ident in leaked:
        assert wait_gone(ident, DEADLINE) is not None
    for ident in (live.server, proxy.server, held_server, half, shim, shimmed):
        assert compare(ident) == SAME, ident
    assert bystander.poll() is None and host.poll() is None
    host.send_signal(signal.SIGKILL)


@pytest.mark.skipif(sys.platform == "darwin", reason="forcing darwin elsewhere is the error")
def test_forcing_the_darwin_backend_off_macos_is_one_clear_line_and_exit_2() -> None:
    """`darwin` needs macOS's libproc; the simulation is `darwin-sim`, which says so."""
    env = {**os.environ, platform.ENV: "darwin"}
    r = subprocess.run([sys.executable, "-m", "mcp_tether", "ps"], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.splitlines() == ["mcp-tether ps: MCP_TETHER_BACKEND=darwin needs macOS's "
                                     "libproc (darwin-sim simulates it on Linux, for tests)"]
