"""The darwin backend's channel answers: fd ends, pipe and socket peers, their holders.

Guarantees:
- Ends are named by the kernel's own handles (`VM_KERNEL_ADDRHASH` of the end's struct:
  salted per boot, stable within it, 0 for none): a pipe end by `pipe_handle`
  (`pipe:[0x…]`; its two ends have different handles), a socket by `soi_pcb`
  (`socket:[0x…]`), a file by its path. A pipe's channel (shared by its two ends) is the
  pair of handles while both ends are open.
- A pipe's far end is `pipe_peerhandle`: 0 once every holder of the other end closed it
  (`pipeclose` clears the survivor's peer and sets `PIPE_EOF` on it, under one lock), so
  "closed" is the kernel's word, not a guess. A UNIX socket's far end is `unsi_conn_pcb`
  (the peer's `soi_pcb`); 0 with `SOI_S_ISDISCONNECTED` means the peer closed, 0 without
  it unconnected (a listener); `SOI_S_CANTRCVMORE` on this end is the peer's
  shutdown(SHUT_WR) (a half-close), `SOI_S_CANTSENDMORE` this end's own shutdown. A
  socket of another family is "unknown" (not a UNIX socket).
- Who holds an end: one pass over every process this user may read, matching handles
  (lsof's `->0x…`), made once per look; other users' processes are not in it, so an
  empty answer proves nothing.
- What a socket is for (`FarEnds.socket`): a listener by `SO_ACCEPTCONN` in
  `soi_options`; a connected UNIX socket was accepted when it bears a bound address
  (`unsi_addr`: `unp_connect` gives the accepted socket its listener's, a client has none
  unless it bound one), its peer `unsi_conn_pcb`; a TCP connection (`SOCKINFO_TCP`,
  `TSI_S_ESTABLISHED`) was accepted when a listener of this user's processes has its
  local address, its peer the socket whose local and foreign addresses are its own
  swapped, from the same one pass. A listener or a peer of another user's is not seen:
  the answer is then "client" or no peer, and the tree kill does not leave the process.
- Every short answer (the fd closed meanwhile, EPERM, ESRCH) is unknown, never "none".
- What libproc's public calls do not show is None: how a process waits (its kqueues'
  registrations), which open file an epoll-style item watches, I/O counters (macOS has
  no rchar/syscr: `superseded` says unknown), threads' system calls.
"""

from __future__ import annotations

import sys
from typing import Any

from mcp_tether._plat import darwin_libproc as abi
from mcp_tether._plat.ends import (
    CLOSED,
    OPEN,
    UNCONNECTED,
    UNKNOWN,
    End,
    Far,
    FdState,
    Sock,
    kind_of_path,
    tcp_text,
)

CHANNEL_DETAIL = True  # this backend sees this user's fds and peers
_OTHER = {abi.PROX_FDTYPE_KQUEUE: "kqueue", abi.PROX_FDTYPE_FSEVENTS: "fsevents", 3: "pshm",
          4: "psem", 9: "netpolicy", 10: "channel", 11: "nexus", 0: "atalk"}
_ACCESS = {abi.FREAD: "r", abi.FWRITE: "w", abi.FREAD | abi.FWRITE: "rw"}


def _hex(handle: int) -> str:
    return f"{handle:#x}"


def _pipe_end(pid: int, fd: int, info: Any) -> End:
    h, peer = info.pipeinfo.pipe_handle, info.pipeinfo.pipe_peerhandle
    end = f"pipe:[{_hex(h)}]"
    channel = f"pipe:[{_hex(min(h, peer))}-{_hex(max(h, peer))}]" if peer else end
    return End("pipe", end, channel, end, _ACCESS.get(info.pfi.fi_openflags & 3))


def _end(api: Any, pid: int, fd: int, kind: int) -> End | None:
    """The end `fd` is open on; None when it closed meanwhile (or cannot be read)."""
    if kind == abi.PROX_FDTYPE_PIPE:
        got = api.fdinfo(pid, fd, abi.PROC_PIDFDPIPEINFO, abi.pipe_fdinfo)
        return None if got is None else _pipe_end(pid, fd, got)
    if kind == abi.PROX_FDTYPE_SOCKET:
        got = api.fdinfo(pid, fd, abi.PROC_PIDFDSOCKETINFO, abi.socket_fdinfo)
        if got is None:
            return None
        end = f"socket:[{_hex(got.psi.soi_pcb)}]"
        return End("socket", end, end, end)
    if kind == abi.PROX_FDTYPE_VNODE:
        got = api.fdinfo(pid, fd, abi.PROC_PIDFDVNODEPATHINFO, abi.vnode_fdinfowithpath)
        if got is None:
            return None
        path = got.pvip.vip_path.decode("utf-8", "surrogateescape")
        st = got.pvip.vip_vi.vi_stat
        name = path or f"vnode:[{st.vst_dev}:{st.vst_ino}]"
        return End(kind_of_path(path), name, name, name)
    # a kqueue, shared memory, a semaphore...: no channel, and no id that another
    # descriptor of the same object would share is shown: named per descriptor
    what = _OTHER.get(kind, f"type {kind}")
    return End("file", f"{what}:[pid {pid} fd {fd}]", f"{what}:[pid {pid} fd {fd}]", what)


def fd_ends(pid: int, only: tuple[int, ...] | None = None, limit: int | None = None,
            known: dict[int, End] | None = None) -> dict[int, End] | None:
    """fd -> `End` (PROC_PIDLISTFDS, then one fd-info call per fd); None if unreadable."""
    api = abi.api()
    fds = api.fds(pid)
    if fds is None or (limit is not None and len(fds) > limit):
        return None
    out: dict[int, End] = {}
    for fd, kind in fds:
        if only is not None and fd not in only:
            continue
        if known and fd in known:
            out[fd] = known[fd]
            continue
        e = _end(api, pid, fd, kind)
        if e is not None:
            out[fd] = e
    return out


def fd_state(pid: int, fd: int) -> FdState | None:
    """`fi_openflags` (FREAD/FWRITE) and `fi_status` (PROC_FP_CLEXEC) of `fd`, and the open
    file as (offset, flags, the end's or file's identity)."""
    api = abi.api()
    kind = dict(api.fds(pid) or ()).get(fd)
    pfi: Any = None
    ident: tuple[object, ...] = ()
    if kind == abi.PROX_FDTYPE_PIPE:
        p = api.fdinfo(pid, fd, abi.PROC_PIDFDPIPEINFO, abi.pipe_fdinfo)
        if p is not None:
            pfi, ident = p.pfi, ("pipe", p.pipeinfo.pipe_handle)
    elif kind == abi.PROX_FDTYPE_SOCKET:
        s = api.fdinfo(pid, fd, abi.PROC_PIDFDSOCKETINFO, abi.socket_fdinfo)
        if s is not None:
            pfi, ident = s.pfi, ("socket", s.psi.soi_so)
    elif kind == abi.PROX_FDTYPE_VNODE:
        v = api.fdinfo(pid, fd, abi.PROC_PIDFDVNODEPATHINFO, abi.vnode_fdinfowithpath)
        if v is not None:
            st = v.pvip.vip_vi.vi_stat
            pfi, ident = v.pfi, ("vnode", st.vst_dev, st.vst_ino)
    if pfi is None:
        return None
    return FdState(_ACCESS.get(pfi.fi_openflags & 3, "rw"),
                   bool(pfi.fi_status & abi.PROC_FP_CLEXEC),
                   (pfi.fi_offset, pfi.fi_openflags, ident))


class FarEnds:
    """One look at far ends: peers from each fd's own answer, holders from one pass."""

    def __init__(self) -> None:
        self._api = abi.api()
        self._held: dict[str, list[int]] | None = None
        self._tcp: dict[tuple[_Addr, _Addr], str] = {}  # (local, foreign) -> end id
        self._listening: set[_Addr] = set()  # TCP listeners' local addresses

    def far(self, pid: int, fd: int, end: End, side: str) -> Far:
        """The far end of `pid`'s `fd`, read again now (`side` does not matter here: each
        pipe end names its peer)."""
        api = self._api
        if end.kind == "pipe":
            got = api.fdinfo(pid, fd, abi.PROC_PIDFDPIPEINFO, abi.pipe_fdinfo)
            if got is None or _pipe_end(pid, fd, got).id != end.id:
                return Far(UNKNOWN, why="the fd closed, was replaced or cannot be read")
            peer = got.pipeinfo.pipe_peerhandle
            if peer == 0:  # pipeclose: the survivor's peer is gone (and PIPE_EOF is set)
                return Far(CLOSED)
            return Far(OPEN, f"pipe:[{_hex(peer)}]", True, True)
        if end.kind == "socket":
            s = api.fdinfo(pid, fd, abi.PROC_PIDFDSOCKETINFO, abi.socket_fdinfo)
            if s is None or f"socket:[{_hex(s.psi.soi_pcb)}]" != end.id:
                return Far(UNKNOWN, why="the fd closed, was replaced or cannot be read")
            if s.psi.soi_kind != abi.SOCKINFO_UN:
                return Far(UNKNOWN, why="not a UNIX socket")
            state = s.psi.soi_state & 0xFFFF
            conn = s.psi.soi_proto.pri_un.unsi_conn_pcb
            if conn == 0:
                return Far(CLOSED if state & abi.SOI_S_ISDISCONNECTED else UNCONNECTED)
            return Far(OPEN, f"socket:[{_hex(conn)}]", not state & abi.SOI_S_CANTRCVMORE,
                       not state & abi.SOI_S_CANTSENDMORE)
        return Far(UNKNOWN, why="not a pipe or a socket")

    def holders(self, end_id: str, skip: set[int]) -> list[int]:
        """Pids (not in `skip`) seen holding `end_id`: one pass over every readable
        process's pipes and sockets, the first time a look asks."""
        if self._held is None:
            self._held = self._index()
        return [pid for pid in self._held.get(end_id, ()) if pid not in skip]

    def _index(self) -> dict[str, list[int]]:
        api = self._api
        held: dict[str, list[int]] = {}
        for pid in api.pids() or ():
            for fd, kind in api.fds(pid) or ():
                if kind == abi.PROX_FDTYPE_PIPE:
                    e = _end(api, pid, fd, kind)
                    end_id = None if e is None else e.id
                elif kind == abi.PROX_FDTYPE_SOCKET:
                    s = api.fdinfo(pid, fd, abi.PROC_PIDFDSOCKETINFO, abi.socket_fdinfo)
                    end_id = None if s is None else f"socket:[{_hex(s.psi.soi_pcb)}]"
                    if s is not None and s.psi.soi_kind == abi.SOCKINFO_TCP:
                        self._note_tcp(s.psi, end_id or "")
                else:
                    continue
                if end_id is not None and pid not in held.setdefault(end_id, []):
                    held[end_id].append(pid)
        return held

    def _note_tcp(self, psi: Any, end_id: str) -> None:
        state = psi.soi_proto.pri_tcp.tcpsi_state
        local, foreign = _tcp_ends(psi.soi_proto.pri_tcp.tcpsi_ini)
        if state == abi.TSI_S_LISTEN:
            self._listening.add(local)
        elif state == abi.TSI_S_ESTABLISHED:
            self._tcp[(local, foreign)] = end_id

    def socket(self, pid: int, fd: int, end: End) -> Sock:
        """What `pid`'s socket `end` is for (module docstring)."""
        if end.kind != "socket":
            return Sock("", "")
        s = self._api.fdinfo(pid, fd, abi.PROC_PIDFDSOCKETINFO, abi.socket_fdinfo)
        if s is None or f"socket:[{_hex(s.psi.soi_pcb)}]" != end.id:
            return Sock("", "")  # closed, replaced or unreadable: not known
        psi = s.psi
        listening = bool(psi.soi_options & abi.SO_ACCEPTCONN)
        if psi.soi_kind == abi.SOCKINFO_UN:
            un = psi.soi_proto.pri_un
            name = _sun_path(un.unsi_addr.ua_sun)
            if listening:
                return Sock("unix", "listen", name)
            if not un.unsi_conn_pcb:
                return Sock("unix", "", name)
            if name:
                return Sock("unix", "accepted", name, f"socket:[{_hex(un.unsi_conn_pcb)}]")
            return Sock("unix", "client", "", f"socket:[{_hex(un.unsi_conn_pcb)}]")
        if psi.soi_kind != abi.SOCKINFO_TCP:
            return Sock("", "")
        tcp = psi.soi_proto.pri_tcp
        if listening or tcp.tcpsi_state == abi.TSI_S_LISTEN:
            return Sock("tcp", "listen", tcp_text(*_tcp_ends(tcp.tcpsi_ini)[0]))
        if tcp.tcpsi_state != abi.TSI_S_ESTABLISHED:
            return Sock("tcp", "")
        if self._held is None:
            self._held = self._index()
        local, foreign = _tcp_ends(tcp.tcpsi_ini)
        anywhere = {(bytes(4), local[1]), (bytes(16), local[1])}
        if local not in self._listening and not anywhere & self._listening:
            return Sock("tcp", "client")
        return Sock("tcp", "accepted", "", self._tcp.get((foreign, local)))

    def close(self) -> None:
        self._held = None


_Addr = tuple[bytes, int]


def _tcp_ends(ini: Any) -> tuple[_Addr, _Addr]:
    """(local, foreign) of an `in_sockinfo` as (address bytes, port): the ports are kept
    in network order (`inp_lport`), an IPv4 address is `i46a_addr4`, an IPv6 one `ina_6`
    (an IPv4-mapped one reads as IPv4, as Linux's tables do)."""
    def addr(u: Any, port: int) -> _Addr:
        port = int.from_bytes((port & 0xFFFF).to_bytes(2, sys.byteorder), "big")
        if ini.insi_vflag & abi.INI_IPV4 and not ini.insi_vflag & abi.INI_IPV6:
            return bytes(u.ina_46)[12:16], port
        raw = bytes(u)
        if raw[:12] == b"\0" * 10 + b"\xff\xff":
            raw = raw[12:]
        return raw, port

    return addr(ini.insi_laddr, ini.insi_lport), addr(ini.insi_faddr, ini.insi_fport)


def _sun_path(sun: Any) -> str:
    """A `sockaddr_un`'s path ("" for none)."""
    return bytes(sun.sun_path).split(b"\0", 1)[0].decode("utf-8", "surrogateescape")


def far_ends() -> FarEnds:
    return FarEnds()


def root_pid_namespace() -> bool | None:
    """True when pid 1 is launchd: macOS has no pid namespaces, so its pid 1 is the
    machine's init. Anything else (the simulation inside a pid namespace) is None: the
    scan then judges pid 1 by what it is, as on Linux."""
    try:
        got = abi.api().pidinfo(1, abi.PROC_PIDT_SHORTBSDINFO, 1, abi.proc_bsdshortinfo)
    except (abi.Gone, PermissionError):
        return None
    return True if got is not None and got.pbsi_comm == b"launchd" else None


def epoll_items(pid: int, ends: dict[int, End] | None = None
                ) -> tuple[list[tuple[int, int, tuple[int, int] | None]], bool] | None:
    return None  # a kqueue's registrations are not in libproc's public calls


def fd_file(pid: int, fd: int) -> tuple[int, int] | None:
    return None  # only epoll items are matched by it; there are none to match here


def thread_waits(pid: int) -> list[tuple[int, str, int | None]] | None:
    return None


def io_counters(pid: int) -> tuple[int, int, int, int] | None:
    return None  # no rchar/syscr on macOS (module docstring)


def environ(pid: int) -> dict[str, str] | None:
    """The environment `pid` was started with (KERN_PROCARGS2); None where refused or
    omitted (the kernel leaves it out for hardened processes: empty reads as unknown)."""
    got = abi.api().args(pid)
    return None if got is None else got[1]
