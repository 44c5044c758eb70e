"""libproc and sysctl through ctypes, for the darwin backend: structures, constants, calls.

Guarantees:
- The structures are `bsd/sys/proc_info.h`'s, field for field, with the same sizes and
  offsets as the C compiler gives them on macOS (LP64: x86_64 and arm64 lay them out
  alike); each constant names the header and line it is read from (xnu-11417.101.15).
  `tests/test_darwin.py` asserts every size and offset the backend reads.
- `Api` is the one place libproc is called: it checks every answer as lsof and psutil do
  (a short return is a failed call; errno says why) and turns failures into the seam's
  words: `Gone` (ESRCH), `PermissionError` (EPERM: another user's process), None (any
  other short answer: unknown). It calls whatever `load()` bound: the real libraries, or
  `darwin_sim`'s stand-ins with the same names and arguments (`bind`).
- No `task_for_pid` (it needs an entitlement and can block: psutil #2885): every call
  here is libproc's or sysctl's, same-user checked by the kernel.
- Stdlib only (ctypes, select, os), loaded on a backend's first process read, never by
  `import mcp_tether` itself.
"""

from __future__ import annotations

import ctypes
import errno as _errno
import os
import sys
from typing import Any

# ----- constants (xnu-11417.101.15) ---------------------------------------------------------
# bsd/sys/proc_info.h
PROC_ALL_PIDS = 1  # :51
PROC_PPID_ONLY = 6  # :56
PROC_FLAG_SYSTEM = 1  # :103
PROC_FP_CLEXEC = 2  # :261
SOI_S_ISCONNECTED = 0x0002  # :501
SOI_S_CANTSENDMORE = 0x0010  # :504
SOI_S_CANTRCVMORE = 0x0020  # :505
SOI_S_ISDISCONNECTED = 0x2000  # :512
SOCKINFO_TCP = 2  # enum SOCKINFO_* (:529 is SOCKINFO_UN)
SOCKINFO_UN = 3  # :529
TSI_S_LISTEN, TSI_S_ESTABLISHED = 1, 4  # tcp_sockinfo's tcpsi_state (TSI_S_*)
INI_IPV4, INI_IPV6 = 0x1, 0x2  # in_sockinfo's insi_vflag
PROX_FDTYPE_VNODE = 1  # :662
PROX_FDTYPE_SOCKET = 2  # :663
PROX_FDTYPE_KQUEUE = 5  # :666
PROX_FDTYPE_PIPE = 6  # :667
PROX_FDTYPE_FSEVENTS = 7  # :668
PROC_PIDLISTFDS = 1  # :718
PROC_PIDTBSDINFO = 3  # :724
PROC_PIDTASKINFO = 4  # :727
PROC_PIDVNODEPATHINFO = 9  # :742
PROC_PIDPATHINFO_MAXSIZE = 4 * 1024  # :750 (4 * MAXPATHLEN)
PROC_PIDT_SHORTBSDINFO = 13  # :755
PROC_PIDFDVNODEPATHINFO = 2  # :775
PROC_PIDFDSOCKETINFO = 3  # :778
PROC_PIDFDPIPEINFO = 6  # :787
# bsd/sys/param.h
MAXCOMLEN = 16  # :95
MAXPATHLEN = 1024  # :206 (PATH_MAX, bsd/sys/syslimits.h:111)
# bsd/sys/pipe.h
PIPE_EOF = 0x080  # :136: set on the survivor by pipeclose (sys_pipe.c:1372)
# bsd/sys/proc.h
SIDL, SRUN, SSLEEP, SSTOP, SZOMB = 1, 2, 3, 4, 5  # :159-163
# bsd/sys/sysctl.h
CTL_KERN = 1  # :695
KERN_ARGMAX = 8  # :727
KERN_PROCARGS2 = 49  # :772
# bsd/sys/event.h
EVFILT_PROC = -5  # :74
EV_ADD = 0x0001  # :144
EV_ONESHOT = 0x0010  # :150
NOTE_EXIT = 0x80000000  # :268
# bsd/sys/fcntl.h
FREAD, FWRITE = 0x1, 0x2  # :112-113
# bsd/sys/proc_internal.h
PID_MAX = 99999  # :749
SOCK_MAXADDRLEN = 255  # bsd/sys/socket.h:465
SO_ACCEPTCONN = 0x0002  # bsd/sys/socket.h: soi_options of a listening socket
NODEV = 0xFFFFFFFF  # (dev_t)-1: proc_bsdinfo's e_tdev without a controlling terminal

_u8, _u16, _i16, _u32, _i32, _u64, _i64 = (ctypes.c_uint8, ctypes.c_uint16, ctypes.c_int16,
                                           ctypes.c_uint32, ctypes.c_int32, ctypes.c_uint64,
                                           ctypes.c_int64)


# ----- structures (bsd/sys/proc_info.h) -----------------------------------------------------
class proc_bsdinfo(ctypes.Structure):  # noqa: N801  # :59, the C names
    _fields_ = [("pbi_flags", _u32), ("pbi_status", _u32), ("pbi_xstatus", _u32),
                ("pbi_pid", _u32), ("pbi_ppid", _u32), ("pbi_uid", _u32), ("pbi_gid", _u32),
                ("pbi_ruid", _u32), ("pbi_rgid", _u32), ("pbi_svuid", _u32),
                ("pbi_svgid", _u32), ("rfu_1", _u32), ("pbi_comm", ctypes.c_char * MAXCOMLEN),
                ("pbi_name", ctypes.c_char * (2 * MAXCOMLEN)), ("pbi_nfiles", _u32),
                ("pbi_pgid", _u32), ("pbi_pjobc", _u32), ("e_tdev", _u32), ("e_tpgid", _u32),
                ("pbi_nice", _i32), ("pbi_start_tvsec", _u64), ("pbi_start_tvusec", _u64)]


class proc_bsdshortinfo(ctypes.Structure):  # noqa: N801  # :85
    _fields_ = [("pbsi_pid", _u32), ("pbsi_ppid", _u32), ("pbsi_pgid", _u32),
                ("pbsi_status", _u32), ("pbsi_comm", ctypes.c_char * MAXCOMLEN),
                ("pbsi_flags", _u32), ("pbsi_uid", _u32), ("pbsi_gid", _u32),
                ("pbsi_ruid", _u32), ("pbsi_rgid", _u32), ("pbsi_svuid", _u32),
                ("pbsi_svgid", _u32), ("pbsi_rfu", _u32)]


class proc_taskinfo(ctypes.Structure):  # noqa: N801  # :127
    _fields_ = [("pti_virtual_size", _u64), ("pti_resident_size", _u64),
                ("pti_total_user", _u64), ("pti_total_system", _u64),
                ("pti_threads_user", _u64), ("pti_threads_system", _u64),
                ("pti_policy", _i32), ("pti_faults", _i32), ("pti_pageins", _i32),
                ("pti_cow_faults", _i32), ("pti_messages_sent", _i32),
                ("pti_messages_received", _i32), ("pti_syscalls_mach", _i32),
                ("pti_syscalls_unix", _i32), ("pti_csw", _i32), ("pti_threadnum", _i32),
                ("pti_numrunning", _i32), ("pti_priority", _i32)]


class proc_fileinfo(ctypes.Structure):  # noqa: N801  # :251
    _fields_ = [("fi_openflags", _u32), ("fi_status", _u32), ("fi_offset", _i64),
                ("fi_type", _i32), ("fi_guardflags", _u32)]


class vinfo_stat(ctypes.Structure):  # noqa: N801  # :288
    _fields_ = [("vst_dev", _u32), ("vst_mode", _u16), ("vst_nlink", _u16),
                ("vst_ino", _u64), ("vst_uid", _u32), ("vst_gid", _u32),
                ("vst_atime", _i64), ("vst_atimensec", _i64), ("vst_mtime", _i64),
                ("vst_mtimensec", _i64), ("vst_ctime", _i64), ("vst_ctimensec", _i64),
                ("vst_birthtime", _i64), ("vst_birthtimensec", _i64), ("vst_size", _i64),
                ("vst_blocks", _i64), ("vst_blksize", _i32), ("vst_flags", _u32),
                ("vst_gen", _u32), ("vst_rdev", _u32), ("vst_qspare", _i64 * 2)]


class fsid_t(ctypes.Structure):  # noqa: N801  # sys/_types/_fsid_t.h: int32_t val[2]
    _fields_ = [("val", _i32 * 2)]


class vnode_info(ctypes.Structure):  # noqa: N801  # :312
    _fields_ = [("vi_stat", vinfo_stat), ("vi_type", ctypes.c_int), ("vi_pad", ctypes.c_int),
                ("vi_fsid", fsid_t)]


class vnode_info_path(ctypes.Structure):  # noqa: N801  # :319
    _fields_ = [("vip_vi", vnode_info), ("vip_path", ctypes.c_char * MAXPATHLEN)]


class vnode_fdinfowithpath(ctypes.Structure):  # noqa: N801  # :329
    _fields_ = [("pfi", proc_fileinfo), ("pvip", vnode_info_path)]


class proc_vnodepathinfo(ctypes.Structure):  # noqa: N801  # :345
    _fields_ = [("pvi_cdir", vnode_info_path), ("pvi_rdir", vnode_info_path)]


class in4in6_addr(ctypes.Structure):  # noqa: N801  # :367
    _fields_ = [("i46a_pad32", _u32 * 3), ("i46a_addr4", _u32)]


class _in_addr46(ctypes.Union):  # in4in6_addr | in6_addr (16 bytes, 4-aligned)
    _fields_ = [("ina_46", in4in6_addr), ("ina_6", _u32 * 4)]


class _in_v4(ctypes.Structure):
    _fields_ = [("in4_tos", ctypes.c_ubyte)]


class _in_v6(ctypes.Structure):
    _fields_ = [("in6_hlim", _u8), ("in6_cksum", ctypes.c_int), ("in6_ifindex", ctypes.c_ushort),
                ("in6_hops", ctypes.c_short)]


class in_sockinfo(ctypes.Structure):  # noqa: N801  # :372
    _fields_ = [("insi_fport", ctypes.c_int), ("insi_lport", ctypes.c_int),
                ("insi_gencnt", _u64), ("insi_flags", _u32), ("insi_flow", _u32),
                ("insi_vflag", _u8), ("insi_ip_ttl", _u8), ("rfu_1", _u32),
                ("insi_faddr", _in_addr46), ("insi_laddr", _in_addr46), ("insi_v4", _in_v4),
                ("insi_v6", _in_v6)]


class tcp_sockinfo(ctypes.Structure):  # noqa: N801  # :425
    _fields_ = [("tcpsi_ini", in_sockinfo), ("tcpsi_state", ctypes.c_int),
                ("tcpsi_timer", ctypes.c_int * 4), ("tcpsi_mss", ctypes.c_int),
                ("tcpsi_flags", _u32), ("rfu_1", _u32), ("tcpsi_tp", _u64)]


class sockaddr_un(ctypes.Structure):  # noqa: N801  # bsd/sys/un.h:79: sun_path[104]
    _fields_ = [("sun_len", _u8), ("sun_family", _u8), ("sun_path", ctypes.c_char * 104)]


class _un_addr(ctypes.Union):
    _fields_ = [("ua_sun", sockaddr_un), ("ua_dummy", ctypes.c_char * SOCK_MAXADDRLEN)]


class un_sockinfo(ctypes.Structure):  # noqa: N801  # :440
    _fields_ = [("unsi_conn_so", _u64), ("unsi_conn_pcb", _u64), ("unsi_addr", _un_addr),
                ("unsi_caddr", _un_addr)]


class _soi_proto(ctypes.Union):
    # The largest members decide the size: pri_un (528 bytes) and pri_tcp (120); the
    # header's others (ndrv 24, kern_event 12, kern_ctl 120, vsock 16) are no larger.
    _fields_ = [("pri_in", in_sockinfo), ("pri_tcp", tcp_sockinfo), ("pri_un", un_sockinfo)]


class sockbuf_info(ctypes.Structure):  # noqa: N801  # :515
    _fields_ = [("sbi_cc", _u32), ("sbi_hiwat", _u32), ("sbi_mbcnt", _u32),
                ("sbi_mbmax", _u32), ("sbi_lowat", _u32), ("sbi_flags", _i16),
                ("sbi_timeo", _i16)]


class socket_info(ctypes.Structure):  # noqa: N801  # :536
    _fields_ = [("soi_stat", vinfo_stat), ("soi_so", _u64), ("soi_pcb", _u64),
                ("soi_type", ctypes.c_int), ("soi_protocol", ctypes.c_int),
                ("soi_family", ctypes.c_int), ("soi_options", _i16), ("soi_linger", _i16),
                ("soi_state", _i16), ("soi_qlen", _i16), ("soi_incqlen", _i16),
                ("soi_qlimit", _i16), ("soi_timeo", _i16), ("soi_error", ctypes.c_ushort),
                ("soi_oobmark", _u32), ("soi_rcv", sockbuf_info), ("soi_snd", sockbuf_info),
                ("soi_kind", ctypes.c_int), ("rfu_1", _u32), ("soi_proto", _soi_proto)]


class socket_fdinfo(ctypes.Structure):  # noqa: N801  # :567
    _fields_ = [("pfi", proc_fileinfo), ("psi", socket_info)]


class pipe_info(ctypes.Structure):  # noqa: N801  # :598
    _fields_ = [("pipe_stat", vinfo_stat), ("pipe_handle", _u64), ("pipe_peerhandle", _u64),
                ("pipe_status", ctypes.c_int), ("rfu_1", ctypes.c_int)]


class pipe_fdinfo(ctypes.Structure):  # noqa: N801  # :606
    _fields_ = [("pfi", proc_fileinfo), ("pipeinfo", pipe_info)]


class proc_fdinfo(ctypes.Structure):  # noqa: N801  # :673
    _fields_ = [("proc_fd", _i32), ("proc_fdtype", _u32)]


# ----- the libraries ---------------------------------------------------------------------------


class Libproc:
    """The real calls: libproc's (libproc.h) and libc's sysctl, with their C prototypes;
    `kqueue`/`kevent`, `getpgid`/`getsid` as Python has them."""

    def __init__(self) -> None:
        import select

        vp, i, u32, u64 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_uint64
        proc = ctypes.CDLL("/usr/lib/libproc.dylib", use_errno=True)
        libc = ctypes.CDLL("/usr/lib/libc.dylib", use_errno=True)
        protos: dict[str, tuple[Any, list[Any]]] = {
            "proc_listpids": (proc, [u32, u32, vp, i]),
            "proc_pidinfo": (proc, [i, i, u64, vp, i]),
            "proc_pidfdinfo": (proc, [i, i, i, vp, i]),
            "proc_pidpath": (proc, [i, vp, u32]),
            "sysctl": (libc, [vp, ctypes.c_uint, vp, vp, vp, ctypes.c_size_t]),
            "sysctlbyname": (libc, [ctypes.c_char_p, vp, vp, vp, ctypes.c_size_t]),
        }
        for name, (lib, args) in protos.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, i
            setattr(self, name, fn)
        self.kqueue, self.kevent = select.kqueue, select.kevent  # type: ignore[attr-defined]  # macOS only
        self.getpgid, self.getsid = os.getpgid, os.getsid


def load() -> Any:
    return Libproc()


_loader: list[Any] = [load]
_api: list[Api] = []


def bind(loader: Any) -> None:
    """Answer every call through what `loader()` returns (darwin_sim's stand-ins)."""
    _loader[:] = [loader]
    _api.clear()


def api() -> Api:
    if not _api:
        _api.append(Api(_loader[0]()))
    return _api[0]


class Gone(Exception):
    """ESRCH: no such process (or, for the calls that skip them, a zombie)."""


def _addr(obj: Any) -> int:
    return ctypes.addressof(obj)


class Api:
    """Checked calls: a short answer is a failure, and errno says which (module doc)."""

    def __init__(self, lib: Any) -> None:
        self.lib = lib
        self._tbfreq: float | None = None

    def _fail(self, what: str) -> None:
        err = ctypes.get_errno()
        if err == _errno.ESRCH:
            raise Gone(what)
        if err == _errno.EPERM:
            raise PermissionError(err, f"{what}: another user's process")

    def pidinfo(self, pid: int, flavor: int, arg: int, kind: Any) -> Any:
        """One `proc_pidinfo` answer as `kind`; None when short for any other reason."""
        buf = kind()
        ctypes.set_errno(0)
        n = self.lib.proc_pidinfo(pid, flavor, arg, _addr(buf), ctypes.sizeof(buf))
        if n < ctypes.sizeof(buf):
            self._fail(f"proc_pidinfo({pid}, {flavor})")
            return None
        return buf

    def fdinfo(self, pid: int, fd: int, flavor: int, kind: Any) -> Any:
        """One `proc_pidfdinfo` answer as `kind`; None when short (EBADF: closed, or not of
        that type; EPERM; ESRCH): unknown."""
        buf = kind()
        ctypes.set_errno(0)
        n = self.lib.proc_pidfdinfo(pid, fd, flavor, _addr(buf), ctypes.sizeof(buf))
        return buf if n >= ctypes.sizeof(buf) else None

    def _list(self, call: Any, item: Any) -> Any:
        """A list call: ask the size first (the kernel adds room for 20 more), then read;
        read again, larger, when the answer filled the buffer (the list grew)."""
        ctypes.set_errno(0)
        want = call(None, 0)
        if want <= 0:
            return None
        size = want // ctypes.sizeof(item) + 16
        for _ in range(4):
            buf = (item * size)()
            ctypes.set_errno(0)
            n = call(_addr(buf), ctypes.sizeof(buf))
            if n <= 0 and ctypes.get_errno():
                return None
            count = max(0, n) // ctypes.sizeof(item)
            if count < size:
                return buf[:count]
            size *= 2
        return None

    def pids(self, kind: int = PROC_ALL_PIDS, of: int = 0) -> list[int] | None:
        got = self._list(lambda b, n: self.lib.proc_listpids(kind, of, b, n), ctypes.c_int)
        return None if got is None else list(got)

    def fds(self, pid: int) -> list[tuple[int, int]] | None:
        """(fd, PROX_FDTYPE_*) of every open fd; None: gone or unreadable."""
        got = self._list(lambda b, n: self.lib.proc_pidinfo(pid, PROC_PIDLISTFDS, 0, b, n),
                         proc_fdinfo)
        return None if got is None else [(f.proc_fd, f.proc_fdtype) for f in got]

    def path(self, pid: int) -> str:
        buf = ctypes.create_string_buffer(PROC_PIDPATHINFO_MAXSIZE)
        n = self.lib.proc_pidpath(pid, _addr(buf), ctypes.sizeof(buf))
        return buf.value.decode("utf-8", "surrogateescape") if n > 0 else ""

    def _sysctl(self, mib: list[int], size: int) -> bytes | None:
        name = (ctypes.c_int * len(mib))(*mib)
        buf = ctypes.create_string_buffer(size)
        length = ctypes.c_size_t(size)
        ctypes.set_errno(0)
        if self.lib.sysctl(_addr(name), len(mib), _addr(buf), _addr(length), None, 0) != 0:
            return None
        return buf.raw[: length.value]

    def procargs(self, pid: int) -> bytes | None:
        """KERN_PROCARGS2 of `pid`: argc, the exec path, argv, envp (and then Apple's own
        strings); None where refused (another user's, a zombie, gone: EINVAL all)."""
        got = self._sysctl([CTL_KERN, KERN_ARGMAX], ctypes.sizeof(ctypes.c_int))
        argmax = int.from_bytes(got, sys.byteorder) if got and len(got) == 4 else 1 << 20
        return self._sysctl([CTL_KERN, KERN_PROCARGS2, pid], argmax)

    def args(self, pid: int) -> tuple[list[str], dict[str, str] | None] | None:
        """(argv, environment or None) of `pid` (`parse_procargs`); None where refused."""
        raw = self.procargs(pid)
        return None if raw is None else parse_procargs(raw)

    def sysctl_text(self, name: bytes) -> str | None:
        """A string sysctl by name (`kern.bootsessionuuid`); None where refused."""
        buf = ctypes.create_string_buffer(256)
        length = ctypes.c_size_t(ctypes.sizeof(buf))
        ctypes.set_errno(0)
        if self.lib.sysctlbyname(name, _addr(buf), _addr(length), None, 0) != 0:
            return None
        return buf.value.decode("ascii", "replace") or None

    def seconds(self, ticks: int) -> float:
        """Mach ticks (proc_taskinfo's CPU times) in seconds: hw.tbfrequency ticks a
        second (mach_timebase_info is wrong under Rosetta 2: psutil's note)."""
        if self._tbfreq is None:
            buf = ctypes.c_uint64(0)
            length = ctypes.c_size_t(8)
            ok = self.lib.sysctlbyname(b"hw.tbfrequency", _addr(buf), _addr(length), None,
                                       0) == 0 and buf.value > 0
            self._tbfreq = float(buf.value) if ok else 1e9
        return ticks / self._tbfreq


def parse_procargs(raw: bytes) -> tuple[list[str], dict[str, str] | None] | None:
    """(argv, environment) from a KERN_PROCARGS2 answer; None if malformed.

    The layout (bsd/kern/kern_exec.c `exec_copyout_strings`, kern_sysctl.c
    `sysctl_procargsx`): a native int argc, the exec path and NULs to pointer alignment,
    argc strings, the environment's strings, NULs to alignment, then Apple's strings
    (`ptr_munge=`...). The environment ends at the first empty string; when its
    alignment needed no NUL, Apple's strings follow at once and read as variables (a
    superset: a comparison of two whole environments then says "different", never
    "same"). An empty environment is None: the kernel omits it for hardened processes
    of others, which an empty one cannot be told from."""
    if len(raw) < 4:
        return None
    argc = int.from_bytes(raw[:4], sys.byteorder, signed=True)
    end = raw.find(b"\0", 4)
    if argc < 0 or end < 0:
        return None
    while end < len(raw) and raw[end] == 0:
        end += 1
    parts = raw[end:].split(b"\0")
    if len(parts) < argc:
        return None
    argv = [p.decode("utf-8", "surrogateescape") for p in parts[:argc]]
    env: dict[str, str] = {}
    for item in parts[argc:]:
        if not item:
            break
        name, eq, value = item.partition(b"=")
        if eq and name:
            env[name.decode("utf-8", "surrogateescape")] = value.decode("utf-8",
                                                                        "surrogateescape")
    return argv, env or None
