"""A simulated libproc, sysctl and kqueue, answered from Linux's /proc: a test backend.

`MCP_TETHER_BACKEND=darwin-sim` runs the darwin backend (`darwin`, `darwin_fds`,
`darwin_libproc`'s checked calls and parsers) on Linux with its C calls answered here:
the same function names and arguments, filling the same ctypes structures byte for byte
at the address given, returning what libproc returns (bytes written; 0 and errno on
failure). So the darwin module's own logic runs in CI against real processes; only the
system-call layer is simulated. Never chosen on its own; named in docs/platforms.md.

What it models, with macOS's meanings:
- The process table: `proc_listpids` (all pids, zombies included; children by
  PROC_PPID_ONLY), PROC_PIDTBSDINFO (zombies only when `arg` asks, as
  `proc_pidinfo` does; `e_tdev` the controlling terminal's device, NODEV for none;
  start = boot time + start ticks, so microseconds are whole ticks),
  PROC_PIDT_SHORTBSDINFO, PROC_PIDTASKINFO (CPU in nanoseconds, `hw.tbfrequency` 1e9),
  PROC_PIDLISTFDS (with the kernel's "+20" size estimate for a NULL buffer),
  PROC_PIDVNODEPATHINFO, `proc_pidpath`; the same-user rule (EPERM for another user's
  process unless root; EINVAL from KERN_PROCARGS2); ESRCH for a gone process and, in the
  calls that skip them, a zombie; EBADF for a closed fd or one of another type (ENOTSOCK
  for the socket flavor); ENOMEM for a buffer smaller than the structure.
- A handle per pipe end, distinct for the read and the write end, salted per boot
  (/proc's boot id) and stable within it; `pipe_peerhandle` is the other end's handle
  while any process holds that end open, 0 once every holder closed it, with `PIPE_EOF`
  on the survivor (decided as the Linux backend does: a fresh end polled through /proc).
- UNIX sockets from sock_diag: `soi_pcb`, `unsi_conn_pcb` (the peer's pcb; 0 and
  `SOI_S_ISDISCONNECTED` once the peer closed; 0 alone for an unconnected socket), the
  shutdown bits as `SOI_S_CANTRCVMORE` / `SOI_S_CANTSENDMORE`, `SO_ACCEPTCONN` on a
  listener and the bound name in `unsi_addr` (an accepted socket's is its listener's on
  both systems; an abstract Linux name reads "@...", macOS has none).
- TCP sockets from /proc/PID/net/tcp{,6}: SOCKINFO_TCP, `tcpsi_state` as TSI_S_*,
  `insi_vflag`, local and foreign addresses and ports in network order.
- KERN_PROCARGS2's byte layout: a native int argc, the exec path and NULs to 8-byte
  alignment, argv, the environment, NULs to alignment, then Apple-style strings
  (`ptr_munge=`...), which the parser must stop before.
- sysctl `kern.bootsessionuuid` (the kernel's boot id) and `hw.tbfrequency`.
- kqueue: `kqueue()` / `kevent()` stand-ins for EVFILT_PROC with NOTE_EXIT, one watched
  process per kqueue (what the backend asks), whose descriptor is a pidfd: readable once
  the process exits; registering a gone or zombie process fails with ESRCH.

What it does not model:
- Sockets other than UNIX and TCP ones are SOCKINFO_GENERIC (macOS says SOCKINFO_IN for
  UDP); every UNIX socket reads as SOCK_STREAM; `soi_stat`, buffers, TCP timers and a
  UNIX socket's `unsi_caddr` are left zero.
- Linux propagates a peer's shutdown(SHUT_RD) into this end's send mask, so the sim can
  show `SOI_S_CANTSENDMORE` where macOS (which does not propagate it) would not.
- A Linux fd opened read-write on a pipe holds both ends; the sim shows its read end.
- A process's comm is Linux's (prctl may rename it), `pbi_name` is empty; `proc_pidpath`
  of another user's process fails (Linux hides its exe link; macOS would answer).
- Hardened processes whose environment macOS omits; KERN_PROCARGS2 into a buffer too
  small (macOS returns a zero-padded tail; here the head); `pti_numrunning` counts the
  main thread only; Linux-only fd kinds read as PROX_FDTYPE_KQUEUE (epoll) or
  PROX_FDTYPE_FSEVENTS (other anonymous inodes).
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import select
import sys
from typing import Any

from mcp_tether._plat import darwin_libproc as abi
from mcp_tether._plat import linux_fdread

_TICKS = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
_O_CLOEXEC, _O_NONBLOCK, _O_APPEND = 0o2000000, 0o4000, 0o2000
_DTYPE_VNODE, _DTYPE_SOCKET, _DTYPE_PIPE = 1, 2, 6  # sys/file_internal.h's DTYPE_*
_STATUS = {"Z": abi.SZOMB, "X": abi.SZOMB, "T": abi.SSTOP, "t": abi.SSTOP, "R": abi.SRUN}
_PF_KTHREAD = 0x00200000
_LINUX_LISTEN = 10  # TCP_LISTEN: a listening socket's state, TCP's and sock_diag's
# Linux's TCP states (include/net/tcp_states.h) as TSI_S_* (proc_info.h)
_TSI = {1: 4, 2: 2, 3: 3, 4: 6, 5: 9, 6: 10, 7: 0, 8: 5, 9: 8, 10: 1, 11: 7}
_ARG_MAX = 1 << 20


def load() -> SimLibproc:
    return SimLibproc()


class _Stat:
    """The fields of /proc/PID/stat the simulation answers from."""

    __slots__ = ("state", "ppid", "pgrp", "session", "tty", "flags", "utime", "stime",
                 "threads", "start", "rss", "comm")

    def __init__(self, data: bytes) -> None:
        rpar = data.rindex(b")")
        self.comm = data[data.index(b"(") + 1 : rpar]
        f = data[rpar + 2 :].split()
        self.state = f[0].decode()
        self.ppid, self.pgrp, self.session = int(f[1]), int(f[2]), int(f[3])
        self.tty = int(f[4])
        self.flags, self.utime, self.stime = int(f[6]), int(f[11]), int(f[12])
        self.threads, self.start, self.rss = int(f[17]), int(f[19]), int(f[21])

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


class _Fail(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _stat(pid: int) -> _Stat:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return _Stat(fh.read())
    except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):
        raise _Fail(errno.ESRCH) from None
    except OSError:
        raise _Fail(errno.EPERM) from None


def _uid(pid: int) -> int:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        raise _Fail(errno.ESRCH) from None


def _copyout(buffer: int | None, obj: Any, size: int) -> int:
    n = min(ctypes.sizeof(obj), size)
    if buffer:
        ctypes.memmove(buffer, ctypes.addressof(obj), n)
    return n


def _libproc_call(fn: Any) -> Any:
    """libproc's convention: bytes written, or 0 with errno set."""
    def call(*args: Any) -> int:
        try:
            got = fn(*args)
        except _Fail as exc:
            ctypes.set_errno(exc.code)
            return 0
        return int(got)

    return call


class SimKevent:
    """select.kevent's fields, for the simulated kqueue."""

    def __init__(self, ident: int, filter: int = 0, flags: int = 0,  # noqa: A002  # kevent's name
                 fflags: int = 0, data: int = 0, udata: int = 0) -> None:
        self.ident, self.filter, self.flags, self.fflags = ident, filter, flags, fflags
        self.data, self.udata = data, udata


class SimKqueue:
    """A kqueue watching one process for NOTE_EXIT; its descriptor is a pidfd."""

    def __init__(self) -> None:
        self._fd: int | None = None
        self._pid = 0

    def control(self, changes: list[SimKevent] | None, max_events: int,
                timeout: float | None = None) -> list[SimKevent]:
        for ev in changes or ():
            if ev.filter != abi.EVFILT_PROC or not ev.fflags & abi.NOTE_EXIT \
                    or not ev.flags & abi.EV_ADD or self._fd is not None:
                raise OSError(errno.EINVAL, "the simulation watches one exit per kqueue")
            try:
                alive = not _stat(ev.ident).zombie  # proc_find: no zombies, no gone ones
            except _Fail:
                alive = False
            if not alive:
                raise ProcessLookupError(errno.ESRCH, os.strerror(errno.ESRCH))
            self._fd, self._pid = os.pidfd_open(ev.ident), ev.ident
        if not max_events or self._fd is None:
            return []
        ready = select.select([self._fd], [], [], timeout)[0]
        return [SimKevent(self._pid, abi.EVFILT_PROC, 0, abi.NOTE_EXIT)] if ready else []

    def fileno(self) -> int:
        if self._fd is None:
            raise OSError(errno.EBADF, "no process registered")
        return self._fd

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class SimLibproc:
    """libproc's, libc's sysctl's and select's names, answered from /proc (module doc)."""

    kqueue = SimKqueue
    kevent = SimKevent

    def __init__(self) -> None:
        try:
            with open("/proc/sys/kernel/random/boot_id", "rb") as fh:
                self._salt = fh.read().strip()
        except OSError:
            self._salt = b"boot"
        self._btime = 0
        with open("/proc/stat", "rb") as fh:
            for line in fh:
                if line.startswith(b"btime "):
                    self._btime = int(line.split()[1])
        self._diag: Any = None
        for name in ("proc_listpids", "proc_pidinfo", "proc_pidfdinfo", "proc_pidpath"):
            setattr(self, name, _libproc_call(getattr(self, "_" + name)))

    def handle(self, *what: object) -> int:
        """A kernel-address-like handle: salted per boot, never 0 (0 means none)."""
        key = self._salt + repr(what).encode()
        return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little") | 1

    def _allowed(self, pid: int) -> None:
        me = os.geteuid()
        if me != 0 and _uid(pid) != me:
            raise _Fail(errno.EPERM)  # proc_security_policy: same user, or root

    # ----- proc_listpids -------------------------------------------------------------------
    def _proc_listpids(self, kind: int, of: int, buffer: int | None, size: int) -> int:
        pids = [int(n) for n in os.listdir("/proc") if n.isdigit()]
        if kind == abi.PROC_PPID_ONLY:
            def child(p: int) -> bool:
                try:
                    return _stat(p).ppid == of
                except _Fail:
                    return False
            pids = [p for p in pids if child(p)]
        elif kind != abi.PROC_ALL_PIDS:
            raise _Fail(errno.EINVAL)
        if not buffer:
            return (len(pids) + 20) * 4
        fit = pids[: size // 4]
        arr = (ctypes.c_int * max(1, len(fit)))(*fit)
        return _copyout(buffer, arr, len(fit) * 4)

    # ----- proc_pidinfo ----------------------------------------------------------------------
    _SIZES = {abi.PROC_PIDTBSDINFO: abi.proc_bsdinfo, abi.PROC_PIDTASKINFO: abi.proc_taskinfo,
              abi.PROC_PIDT_SHORTBSDINFO: abi.proc_bsdshortinfo,
              abi.PROC_PIDVNODEPATHINFO: abi.proc_vnodepathinfo}

    def _proc_pidinfo(self, pid: int, flavor: int, arg: int, buffer: int | None,
                      size: int) -> int:
        kind = self._SIZES.get(flavor)
        if flavor == abi.PROC_PIDLISTFDS:
            return self._listfds(pid, buffer, size)
        if kind is None:
            raise _Fail(errno.EINVAL)
        if size < ctypes.sizeof(kind):
            raise _Fail(errno.ENOMEM)
        st = _stat(pid)
        zombies = flavor in (abi.PROC_PIDTBSDINFO, abi.PROC_PIDT_SHORTBSDINFO) and arg
        if st.zombie and not zombies:
            raise _Fail(errno.ESRCH)
        if flavor != abi.PROC_PIDT_SHORTBSDINFO:
            self._allowed(pid)
        out = kind()
        status = _STATUS.get(st.state, abi.SSLEEP)
        system = abi.PROC_FLAG_SYSTEM if st.flags & _PF_KTHREAD else 0
        if flavor == abi.PROC_PIDTBSDINFO:
            out.pbi_status, out.pbi_pid, out.pbi_ppid = status, pid, st.ppid
            out.pbi_uid = out.pbi_ruid = _uid(pid)
            out.pbi_flags, out.pbi_pgid = system, st.pgrp
            out.e_tdev = st.tty or abi.NODEV  # proc_pidbsdinfo: NODEV without one
            out.pbi_comm = st.comm[: abi.MAXCOMLEN - 1]
            sec, ticks = divmod(st.start, _TICKS)
            out.pbi_start_tvsec = self._btime + sec
            out.pbi_start_tvusec = ticks * 1_000_000 // _TICKS
        elif flavor == abi.PROC_PIDT_SHORTBSDINFO:
            out.pbsi_pid, out.pbsi_ppid, out.pbsi_pgid = pid, st.ppid, st.pgrp
            out.pbsi_status, out.pbsi_flags, out.pbsi_uid = status, system, _uid(pid)
            out.pbsi_comm = st.comm[: abi.MAXCOMLEN - 1]
        elif flavor == abi.PROC_PIDTASKINFO:
            ns = 1_000_000_000 // _TICKS
            out.pti_total_user, out.pti_total_system = st.utime * ns, st.stime * ns
            out.pti_resident_size = st.rss * _PAGE
            out.pti_threadnum, out.pti_numrunning = st.threads, int(st.state == "R")
        else:  # PROC_PIDVNODEPATHINFO
            try:
                out.pvi_cdir.vip_path = os.fsencode(os.readlink(f"/proc/{pid}/cwd"))[:1023]
            except OSError:
                raise _Fail(errno.EPERM) from None
        return _copyout(buffer, out, size)

    def _listfds(self, pid: int, buffer: int | None, size: int) -> int:
        st = _stat(pid)
        if st.zombie:
            raise _Fail(errno.ESRCH)
        self._allowed(pid)
        try:
            names = sorted(int(n) for n in os.listdir(f"/proc/{pid}/fd"))
        except FileNotFoundError:
            raise _Fail(errno.ESRCH) from None
        except OSError:
            raise _Fail(errno.EPERM) from None
        if not buffer:
            return (len(names) + 20) * ctypes.sizeof(abi.proc_fdinfo)
        out = []
        for fd in names[: size // ctypes.sizeof(abi.proc_fdinfo)]:
            try:
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue  # closed meanwhile
            out.append(abi.proc_fdinfo(fd, _fdtype(link)))
        arr = (abi.proc_fdinfo * max(1, len(out)))(*out)
        return _copyout(buffer, arr, len(out) * ctypes.sizeof(abi.proc_fdinfo))

    # ----- proc_pidfdinfo --------------------------------------------------------------------
    def _proc_pidfdinfo(self, pid: int, fd: int, flavor: int, buffer: int | None,
                        size: int) -> int:
        kinds: dict[int, Any] = {abi.PROC_PIDFDPIPEINFO: abi.pipe_fdinfo,
                                 abi.PROC_PIDFDSOCKETINFO: abi.socket_fdinfo,
                                 abi.PROC_PIDFDVNODEPATHINFO: abi.vnode_fdinfowithpath}
        kind = kinds.get(flavor)
        if kind is None:
            raise _Fail(errno.EINVAL)
        if size < ctypes.sizeof(kind):
            raise _Fail(errno.ENOMEM)
        if _stat(pid).zombie:
            raise _Fail(errno.ESRCH)
        self._allowed(pid)
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            raise _Fail(errno.EBADF) from None
        out = kind()
        fill: dict[int, Any] = {abi.PROC_PIDFDPIPEINFO: self._pipe,
                                abi.PROC_PIDFDSOCKETINFO: self._socket,
                                abi.PROC_PIDFDVNODEPATHINFO: self._vnode}
        fill[flavor](pid, fd, link, out)
        return _copyout(buffer, out, size)

    def _pfi(self, pid: int, fd: int, dtype: int) -> abi.proc_fileinfo:
        info = linux_fdread.fd_info(pid, fd)
        try:
            flags, pos = int((info or {})["flags"], 8), int((info or {})["pos"])
        except (KeyError, ValueError):
            raise _Fail(errno.EBADF) from None
        pfi = abi.proc_fileinfo()
        # fg_flag: FREAD/FWRITE are O_ACCMODE + 1 (FFLAGS); close-on-exec is the fd's own
        pfi.fi_openflags = ((flags & 3) + 1) | (4 if flags & _O_NONBLOCK else 0) \
            | (8 if flags & _O_APPEND else 0)  # FNONBLOCK, FAPPEND (sys/fcntl.h)
        pfi.fi_status = abi.PROC_FP_CLEXEC if flags & _O_CLOEXEC else 0
        pfi.fi_offset, pfi.fi_type = pos, dtype
        return pfi

    def _pipe(self, pid: int, fd: int, link: str, out: abi.pipe_fdinfo) -> None:
        if not link.startswith("pipe:["):
            raise _Fail(errno.EBADF)
        ino = int(link[6:-1])
        mode = linux_fdread.fd_mode(pid, fd)
        if mode is None:
            raise _Fail(errno.EBADF)
        mine = "r" if "r" in mode else "w"
        other = "w" if mine == "r" else "r"
        alive = linux_fdread.pipe_peer(pid, fd, ino, mine)  # is the other end held anywhere?
        if alive == "unknown":
            raise _Fail(errno.EBADF)  # the fd was replaced under us
        out.pfi = self._pfi(pid, fd, _DTYPE_PIPE)
        out.pipeinfo.pipe_handle = self.handle("pipe", ino, mine)
        out.pipeinfo.pipe_peerhandle = self.handle("pipe", ino, other) if alive == "yes" else 0
        out.pipeinfo.pipe_status = abi.PIPE_EOF if alive == "no" else 0

    def _socket(self, pid: int, fd: int, link: str, out: abi.socket_fdinfo) -> None:
        if not link.startswith("socket:["):
            raise _Fail(errno.ENOTSOCK)
        ino = int(link[8:-1])
        if self._diag is None:
            self._diag = linux_fdread.UnixDiag()
        got = self._diag.info(ino)
        out.pfi = self._pfi(pid, fd, _DTYPE_SOCKET)
        psi = out.psi
        psi.soi_so, psi.soi_pcb = self.handle("so", ino), self.handle("pcb", ino)
        if got is None:
            self._tcp(pid, ino, psi)  # SOCKINFO_TCP, or SOCKINFO_GENERIC as far as shown
            return
        peer, shut, diag_state, name = got
        if shut is None:
            raise _Fail(errno.EOPNOTSUPP)  # no shutdown state: the call cannot be answered
        psi.soi_kind, psi.soi_family, psi.soi_type = abi.SOCKINFO_UN, 1, 1  # AF_UNIX, STREAM
        if diag_state == _LINUX_LISTEN:
            psi.soi_options = abi.SO_ACCEPTCONN
        # an accepted socket carries its listener's name on both systems (unp_connect
        # copies unp_addr; Linux shares the listener's address)
        psi.soi_proto.pri_un.unsi_addr.ua_sun.sun_path = os.fsencode(name)[:103]
        state = (abi.SOI_S_CANTRCVMORE if shut & 1 else 0) \
            | (abi.SOI_S_CANTSENDMORE if shut & 2 else 0)
        un = psi.soi_proto.pri_un
        if peer:
            un.unsi_conn_pcb, un.unsi_conn_so = self.handle("pcb", peer), self.handle("so", peer)
            state |= abi.SOI_S_ISCONNECTED
        elif peer == 0:  # unp_disconnect: both sides disconnected, no more either way
            state |= abi.SOI_S_ISDISCONNECTED | abi.SOI_S_CANTRCVMORE | abi.SOI_S_CANTSENDMORE
        psi.soi_state = state

    def _tcp(self, pid: int, ino: int, psi: abi.socket_info) -> None:
        """A TCP socket from /proc/PID/net/tcp{,6}: its state as TSI_S_*, its addresses
        and ports in network order, as `fill_socketinfo` gives them."""
        row = next((r for r in linux_fdread.tcp_table(pid) if r[0] == ino), None)
        if row is None:
            psi.soi_kind = 0  # SOCKINFO_GENERIC: UDP, netlink...: not modelled
            return
        _ino, st, local, remote = row
        psi.soi_kind, psi.soi_type = abi.SOCKINFO_TCP, 1  # SOCK_STREAM
        tcp = psi.soi_proto.pri_tcp
        tcp.tcpsi_state = _TSI.get(st, 0)  # TSI_S_CLOSED
        if st == _LINUX_LISTEN:
            psi.soi_options = abi.SO_ACCEPTCONN
        ini = tcp.tcpsi_ini
        v4 = len(local[0]) == 4 and len(remote[0]) == 4
        ini.insi_vflag = abi.INI_IPV4 if v4 else abi.INI_IPV6
        psi.soi_family = 2 if v4 else 30  # AF_INET, AF_INET6 (macOS's numbers)
        for field, port, (raw, number) in ((ini.insi_laddr, "insi_lport", local),
                                            (ini.insi_faddr, "insi_fport", remote)):
            whole = raw if len(raw) == 16 else bytes(12) + raw
            ctypes.memmove(ctypes.addressof(field), whole, 16)
            setattr(ini, port, int.from_bytes(number.to_bytes(2, "big"), sys.byteorder))

    def _vnode(self, pid: int, fd: int, link: str, out: abi.vnode_fdinfowithpath) -> None:
        if not link.startswith("/"):
            raise _Fail(errno.EBADF)  # not a vnode: a pipe, a socket, an anonymous inode
        try:
            st = os.stat(f"/proc/{pid}/fd/{fd}")
        except OSError:
            raise _Fail(errno.EBADF) from None
        out.pfi = self._pfi(pid, fd, _DTYPE_VNODE)
        vs = out.pvip.vip_vi.vi_stat
        vs.vst_dev, vs.vst_ino = st.st_dev & 0xFFFFFFFF, st.st_ino
        vs.vst_mode, vs.vst_size = st.st_mode & 0xFFFF, st.st_size
        out.pvip.vip_path = os.fsencode(link)[: abi.MAXPATHLEN - 1]

    # ----- proc_pidpath, sysctl --------------------------------------------------------------
    def _proc_pidpath(self, pid: int, buffer: int | None, size: int) -> int:
        _stat(pid)
        try:
            path = os.fsencode(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            raise _Fail(errno.EPERM) from None  # macOS would answer (module doc)
        path = path[: max(0, size - 1)]
        _copyout(buffer, ctypes.create_string_buffer(path), len(path) + 1)
        return len(path)  # libproc's proc_pidpath returns strlen of what it wrote

    def sysctl(self, name: int, namelen: int, oldp: int | None, oldlenp: int,
               newp: int | None, newlen: int) -> int:
        mib = list((ctypes.c_int * namelen).from_address(name))
        length = ctypes.c_size_t.from_address(oldlenp)
        try:
            if mib == [abi.CTL_KERN, abi.KERN_ARGMAX]:
                data = _ARG_MAX.to_bytes(4, sys.byteorder)
            elif mib[:2] == [abi.CTL_KERN, abi.KERN_PROCARGS2] and len(mib) == 3:
                data = self._procargs(mib[2])
            else:
                raise _Fail(errno.ENOENT)
        except _Fail as exc:
            ctypes.set_errno(exc.code)
            return -1
        if oldp:
            data = data[: length.value]
            ctypes.memmove(oldp, data, len(data))
        length.value = len(data)
        return 0

    def sysctlbyname(self, name: bytes, oldp: int | None, oldlenp: int, newp: int | None,
                     newlen: int) -> int:
        length = ctypes.c_size_t.from_address(oldlenp)
        if name == b"kern.bootsessionuuid":  # a string made at each boot: Linux's boot id
            text = self._salt + b"\0"
            if oldp:
                if length.value < len(text):
                    ctypes.set_errno(errno.ENOMEM)
                    return -1
                ctypes.memmove(oldp, text, len(text))
            length.value = len(text)
            return 0
        if name != b"hw.tbfrequency":
            ctypes.set_errno(errno.ENOENT)
            return -1
        if oldp:
            ctypes.c_uint64.from_address(oldp).value = 1_000_000_000  # ns: TASKINFO's unit
        length.value = 8
        return 0

    def _procargs(self, pid: int) -> bytes:
        try:
            st = _stat(pid)
            if st.zombie:
                raise _Fail(errno.EINVAL)
            me = os.geteuid()
            if me != 0 and _uid(pid) != me:
                raise _Fail(errno.EINVAL)  # sysctl_procargsx: another user's, not root
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmdline = fh.read()
            with open(f"/proc/{pid}/environ", "rb") as fh:
                env = fh.read()
        except _Fail:
            raise _Fail(errno.EINVAL) from None
        except OSError:
            raise _Fail(errno.EINVAL) from None
        if not cmdline:
            raise _Fail(errno.EINVAL)  # a kernel thread: no user stack
        argv = cmdline[:-1].split(b"\0") if cmdline.endswith(b"\0") else [cmdline]
        try:
            exe = os.fsencode(os.readlink(f"/proc/{pid}/exe"))
        except OSError:
            exe = argv[0]
        strings = _aligned(exe + b"\0")
        strings += _aligned(b"".join(a + b"\0" for a in argv) + env)
        apple = [b"ptr_munge=", b"main_stack=", b"executable_file=0x1a0100000b,0x%x" % pid,
                 b"th_port=0x%x" % (0x103 + pid)]
        strings += _aligned(b"".join(a + b"\0" for a in apple))
        return len(argv).to_bytes(4, sys.byteorder) + strings

    def getpgid(self, pid: int) -> int:
        self._live(pid)
        return os.getpgid(pid)

    def getsid(self, pid: int) -> int:
        self._live(pid)
        return os.getsid(pid)

    @staticmethod
    def _live(pid: int) -> None:
        try:
            gone = _stat(pid).zombie  # macOS's getpgid/getsid find live processes only
        except _Fail:
            gone = True
        if gone:
            raise ProcessLookupError(errno.ESRCH, os.strerror(errno.ESRCH))


def _aligned(data: bytes) -> bytes:
    """`data` and NULs up to a pointer boundary (8 bytes), as exec lays strings out."""
    return data + b"\0" * (-len(data) % 8)


def _fdtype(link: str) -> int:
    if link.startswith("pipe:["):
        return abi.PROX_FDTYPE_PIPE
    if link.startswith("socket:["):
        return abi.PROX_FDTYPE_SOCKET
    if link == "anon_inode:[eventpoll]":
        return abi.PROX_FDTYPE_KQUEUE
    if link.startswith("/"):
        return abi.PROX_FDTYPE_VNODE
    return abi.PROX_FDTYPE_FSEVENTS
