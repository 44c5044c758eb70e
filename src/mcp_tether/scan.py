"""Orphan finding: MCP stdio server processes on this machine, with evidence.

Guarantees:
- Evidence only: nothing here sends a signal or writes to a process. `reap` (scan_cli)
  acts on a `ScanResult`, re-checking identity itself.
- A server is found three ways: its command matches a stdio server of some host config
  (`config`); it is a package-runner child of a running host (`host`); or its argv looks
  like an MCP server (`guess`). A wrapper (npx, uvx, sh -c, the mcp-tether guard, ...)
  and the real server it runs are one `Server`, rooted at the outermost wrapper.
- Orphan evidence, per server tree (judged on its root):
  `parent-gone`   reparented to pid 1 or to a known subreaper that is not a host;
  `stdin-no-writer` fd 0 is a pipe with no writer left (kernel truth: we open the pipe
  read-only through /proc and poll it; POLLHUP means no writer anywhere, any user) or a
  UNIX socket whose peer is closed or shut down for writing (sock_diag UNIX_DIAG_PEER);
  `host-gone`     it matches only configs of hosts none of which is running (supplementary:
  it never makes a server an orphan on its own, a shared command may serve a live host).
  A server is an orphan when it has `parent-gone` or `stdin-no-writer`; two live copies
  under a live host have neither.
- Unreadable processes (other users, hidepid) are skipped quietly and counted; a
  process that vanishes mid-scan is simply not there. Never an error.
- Linux reads /proc directly (the scan must stay within 2x of `ps -e`); elsewhere psutil
  enumerates and stdin evidence is `unknown`.
"""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_tether import platform
from mcp_tether.proc import ProcessId
from mcp_tether.proc.identity import split_stat

__all__ = [
    "PARENT_GONE",
    "STDIN_NO_WRITER",
    "HOST_GONE",
    "STRONG",
    "Proc",
    "Member",
    "Stdin",
    "Server",
    "ScanResult",
    "scan",
    "read_process",
    "classify_host",
    "looks_like_mcp",
]

PARENT_GONE = "parent-gone"
STDIN_NO_WRITER = "stdin-no-writer"
HOST_GONE = "host-gone"
STRONG = (PARENT_GONE, STDIN_NO_WRITER)  # both: `reap` acts by default

# Processes that adopt orphans. Being adopted by one of these (rather than by the
# process that started you) is what "parent gone" looks like from outside.
SUBREAPERS = frozenset(
    {"systemd", "init", "tini", "docker-init", "dumb-init", "catatonit", "s6-svscan",
     "runsvdir", "launchd"}
)
# Processes that run the real server for the host and pass stdio through.
RUNNERS = frozenset(
    {"npx", "npm", "uvx", "uv", "pipx", "bunx", "bun", "pnpm", "pnpx", "yarn", "deno",
     "docker", "podman", "mcp-tether"}
)
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish", "cmd", "cmd.exe"})
INTERPRETERS_RE = re.compile(r"^(node|nodejs|python[0-9.]*|pythonw?|pypy[0-9.]*|ruby|java)$")

_MCP_WORD = re.compile(
    r"""^(?:
        mcp[-_](?!tether\b)[\w.-]+          # mcp-server-git, mcp_server_fetch, mcp-remote
      | fastmcp
      | [\w.-]+[-_.]mcp(?:[-_]server)?(?:\.(?:py|js|mjs|cjs|ts))?   # foo-mcp, github-mcp-server
    )$""",
    re.X | re.I,
)
_VERSION_SUFFIX = re.compile(r"(?<=.)@[\w.^~<>=*-]+$")


# ----- host processes --------------------------------------------------------------

_HOST_NAMES: dict[str, str] = {
    "claude": "claude-code",
    "claude-desktop": "claude-desktop",
    "Claude": "claude-desktop",
    "Claude.exe": "claude-desktop",
    "cursor": "cursor",
    "Cursor": "cursor",
    "Cursor.exe": "cursor",
    "Cursor Helper": "cursor",
    "Cursor Helper (Plugin)": "cursor",
    "code": "vscode",
    "Code": "vscode",
    "Code.exe": "vscode",
    "code-insiders": "vscode",
    "code-oss": "vscode",
    "codium": "vscode",
    "Code Helper": "vscode",
    "Code Helper (Plugin)": "vscode",
    "windsurf": "windsurf",
    "Windsurf": "windsurf",
    "Windsurf.exe": "windsurf",
    "Windsurf Helper (Plugin)": "windsurf",
    "zed": "zed",
    "Zed": "zed",
    "zed-editor": "zed",
    "zed.exe": "zed",
}
_HOST_PATHS = (
    ("/Claude.app/", "claude-desktop"),
    ("@anthropic-ai/claude-code/", "claude-code"),
    ("/Cursor.app/", "cursor"),
    ("/Visual Studio Code.app/", "vscode"),
    ("/.vscode-server/", "vscode"),
    ("/.cursor-server/", "cursor"),
    ("/Windsurf.app/", "windsurf"),
    ("/.windsurf-server/", "windsurf"),
    ("/Zed.app/", "zed"),
)


def classify_host(argv: Sequence[str], comm: str = "") -> str | None:
    """The host an MCP client process belongs to, judged conservatively, or None.

    By the executable's name (argv[0], else comm) or by a path only a host installs
    (an app bundle, the VS Code server, the Claude Code package a node process runs).
    """
    if not argv:
        return _HOST_NAMES.get(comm) if comm in ("claude", "cursor", "zed-editor") else None
    exe = argv[0]
    name = _HOST_NAMES.get(os.path.basename(exe))
    if name is not None:
        return name
    head = " ".join(argv[:2])
    for marker, host in _HOST_PATHS:
        if marker in head:
            return host
    return None


# ----- one process, as read -----------------------------------------------------------


@dataclass(slots=True)
class Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    state: str
    start: float  # clock ticks since boot (the ProcessId start)
    comm: str
    cpu_ticks: int
    rss_bytes: int
    argv: list[str] | None  # None: not read yet (see `_argv`)

    @property
    def ident(self) -> ProcessId:
        return ProcessId(self.pid, self.start)


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
_PF_KTHREAD = 0x00200000


def _read_all(path: str, size: int = 65536) -> bytes:
    # procfs hands over everything available up to `size` in one read: read again only
    # when the buffer came back full (saves a syscall per file on every process).
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        data = os.read(fd, size)
        if len(data) < size:
            return data
        chunks = [data]
        while True:
            b = os.read(fd, size)
            if not b:
                return b"".join(chunks)
            chunks.append(b)
    finally:
        os.close(fd)


def read_process(pid: int, want_argv: Callable[[str], bool] | None = None) -> Proc | None:
    """One process from /proc; None if gone, a kernel thread or a zombie.

    argv is read only when `want_argv(comm)` says so (None: always): most processes on a
    machine are ruled out by their name alone, and cmdline is half the cost of a scan.
    Raises PermissionError when the process exists but may not be read (the scan skips it).
    """
    try:
        data = _read_all(f"/proc/{pid}/stat", 4096)
    except (FileNotFoundError, ProcessLookupError):
        return None
    comm, f = split_stat(data)
    # f[k] is stat field k+3: state 3, ppid 4, pgrp 5, session 6, flags 9, utime 14,
    # stime 15, starttime 22, rss 24.
    state = f[0].decode()
    if int(f[6]) & _PF_KTHREAD or state in ("Z", "X", "x"):
        return None
    argv = None
    if want_argv is None or want_argv(comm):
        argv = _read_cmdline(pid)
        if argv is None:
            return None
    return Proc(
        pid, int(f[1]), int(f[2]), int(f[3]), state, float(f[19]), comm,
        int(f[11]) + int(f[12]), int(f[21]) * _PAGE, argv,
    )


def _read_cmdline(pid: int) -> list[str] | None:
    try:
        raw = _read_all(f"/proc/{pid}/cmdline")
    except (FileNotFoundError, ProcessLookupError):
        return None
    return [a.decode(errors="replace") for a in raw.split(b"\0")[:-1]] if raw else []


def _argv(p: Proc) -> list[str]:
    """p's argv, read now if the snapshot skipped it ([] if unreadable or gone)."""
    if p.argv is None:
        try:
            p.argv = _read_cmdline(p.pid) or []
        except OSError:
            p.argv = []
    return p.argv


# Names (comm, first word, lower case, at most 15 characters as the kernel keeps them)
# worth reading argv for: interpreters, runners, shells, hosts, anything with "mcp".
_COMM_NAMES = frozenset(
    {n[:15].lower() for n in RUNNERS | SHELLS | {"node", "nodejs", "ruby", "java", "fastmcp",
                                                "electron", "claude-desktop"}}
    | {k.split(" ")[0][:15].lower() for k in _HOST_NAMES}
)


def _comm_filter(extra: Iterable[str]) -> Callable[[str], bool]:
    names = _COMM_NAMES | {e[:15].lower() for e in extra}

    def want(comm: str) -> bool:
        c = comm.lower()
        return ("mcp" in c or c.split(" ", 1)[0] in names or c.startswith(("python", "pypy"))
                or c in names)

    return want


def _snapshot(want_argv: Callable[[str], bool] | None = None
              ) -> tuple[dict[int, Proc], int]:
    """Every readable user-space process, and how many could not be read."""
    procs: dict[int, Proc] = {}
    unreadable = 0
    if platform.has_proc():
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                p = read_process(int(name), want_argv)
            except PermissionError:
                unreadable += 1
                continue
            except (OSError, ValueError, IndexError):
                continue  # vanished mid-read, or a stat we cannot parse
            if p is not None:
                procs[p.pid] = p
        return procs, unreadable
    return _snapshot_psutil()


def _snapshot_psutil() -> tuple[dict[int, Proc], int]:
    import psutil  # non-Linux enumeration

    procs: dict[int, Proc] = {}
    unreadable = 0
    for ps in psutil.process_iter():
        try:
            with ps.oneshot():
                if ps.status() == psutil.STATUS_ZOMBIE:
                    continue
                t = ps.cpu_times()
                pgid = sid = -1
                with contextlib.suppress(OSError):
                    pgid, sid = os.getpgid(ps.pid), os.getsid(ps.pid)
                procs[ps.pid] = Proc(
                    ps.pid, ps.ppid(), pgid, sid, "S", ps.create_time(), ps.name(),
                    int((t.user + t.system) * 100), ps.memory_info().rss, ps.cmdline(),
                )
        except psutil.AccessDenied:
            unreadable += 1
        except psutil.Error:
            continue
    return procs, unreadable


# ----- stdin evidence ------------------------------------------------------------------

NLMSG_ERROR = 2
SOCK_DIAG_BY_FAMILY = 20
NETLINK_SOCK_DIAG = 4
UDIAG_SHOW_PEER = 0x04
UNIX_DIAG_PEER = 2
UNIX_DIAG_SHUTDOWN = 6
RCV_SHUTDOWN = 1


@dataclass(slots=True)
class Stdin:
    """What fd 0 of a server is, and whether anybody can still write to it."""

    kind: str  # pipe | socket | tty | file | null | closed | unknown
    writer: str  # yes | no | unknown | n/a (not a channel a client writes to)
    inode: int | None = None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "writer": self.writer, "inode": self.inode,
                "detail": self.detail}


class _UnixDiag:
    """Ask the kernel (NETLINK_SOCK_DIAG) for a UNIX socket's peer: needs no privilege."""

    def __init__(self) -> None:
        self._sock: Any = None  # a NETLINK_SOCK_DIAG socket, opened on first use
        self._seq = 0

    def peer(self, ino: int) -> tuple[int | None, int] | None:
        """(peer inode or None if unconnected, shutdown mask); None if not a UNIX socket."""
        import socket  # deferred, as are struct, select and shlex: most scans never need them
        import struct

        try:
            if self._sock is None:
                self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_SOCK_DIAG)
                self._sock.settimeout(1.0)
            self._seq += 1
            req = struct.pack("=BBHIIIII", socket.AF_UNIX, 0, 0, 0xFFFFFFFF, ino,
                              UDIAG_SHOW_PEER, 0xFFFFFFFF, 0xFFFFFFFF)
            self._sock.sendto(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 1,
                                          self._seq, 0) + req, (0, 0))
            data = self._sock.recv(65536)
        except (OSError, AttributeError):
            return None
        length, typ = struct.unpack_from("=IH", data)  # nlmsghdr: len, type
        if typ == NLMSG_ERROR or typ != SOCK_DIAG_BY_FAMILY or length > len(data):
            return None
        off, peer, shut = 32, None, 0
        while off + 4 <= length:
            alen, atype = struct.unpack_from("=HH", data, off)
            if alen < 4:
                break
            if atype == UNIX_DIAG_PEER and alen >= 8:
                peer = struct.unpack_from("=I", data, off + 4)[0]
            elif atype == UNIX_DIAG_SHUTDOWN and alen >= 5:
                shut = data[off + 4]
            off += (alen + 3) & ~3
        return peer, shut

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None


def _read_stdin(pid: int, diag: _UnixDiag) -> Stdin:
    if not platform.has_proc():
        return Stdin("unknown", "unknown", detail="no /proc here")
    path = f"/proc/{pid}/fd/0"
    try:
        link = os.readlink(path)
    except FileNotFoundError:
        return Stdin("closed", "n/a")
    except OSError as exc:
        return Stdin("unknown", "unknown", detail=exc.strerror or "unreadable")
    if link.startswith("pipe:["):
        ino = int(link[6:-1])
        return _pipe_writer(path, ino)
    if link.startswith("socket:["):
        ino = int(link[8:-1])
        got = diag.peer(ino)
        if got is None:
            return Stdin("socket", "unknown", ino, "not a UNIX socket, or sock_diag refused")
        peer, shut = got
        if peer is None:
            return Stdin("socket", "unknown", ino, "unconnected UNIX socket")
        if peer == 0:
            return Stdin("socket", "no", ino, "UNIX socket peer closed")
        if shut & RCV_SHUTDOWN:
            return Stdin("socket", "no", ino, "UNIX socket peer shut down writing")
        return Stdin("socket", "yes", ino, f"UNIX socket peer socket:[{peer}]")
    if link == "/dev/null":
        return Stdin("null", "n/a")
    if link.startswith(("/dev/pts/", "/dev/tty")):
        return Stdin("tty", "n/a", detail=link)
    return Stdin("file", "n/a", detail=link)


def _pipe_writer(path: str, ino: int) -> Stdin:
    # Opening an anonymous pipe through /proc gives a new read end of the same pipe;
    # poll() with no events requested then reports POLLHUP iff no write end is open in
    # any process (pipe_poll: !pipe->writers). Nothing is read, the server is undisturbed.
    import select

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        return Stdin("pipe", "unknown", ino, exc.strerror or "cannot open")
    try:
        if os.fstat(fd).st_ino != ino:  # fd 0 was replaced between readlink and open
            return Stdin("pipe", "unknown", ino, "stdin changed while reading")
        p = select.poll()
        p.register(fd, 0)
        hup = any(ev & select.POLLHUP for _, ev in p.poll(0))
    finally:
        os.close(fd)
    return Stdin("pipe", "no" if hup else "yes", ino, "no write end open" if hup else "")


def _pipe_holders(ino: int, skip: set[int]) -> list[int]:
    """Pids (not in `skip`) with the pipe `ino` open for writing: explains a missing EOF.

    One pass over every readable /proc/*/fd; only run for servers whose parent is gone
    but whose stdin still has a writer (rare), so its cost stays off the common path.
    """
    target = f"pipe:[{ino}]"
    out: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in skip:
            continue
        base = f"/proc/{name}/fd"
        try:
            fds = os.listdir(base)
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"{base}/{fd}") != target:
                    continue
                with open(f"/proc/{name}/fdinfo/{fd}") as fh:
                    flags = next((int(ln.split()[1], 8) for ln in fh if ln.startswith("flags")), 0)
            except (OSError, ValueError):
                continue
            if flags & 3 in (os.O_WRONLY, os.O_RDWR):
                out.append(int(name))
                break
    return out


# ----- matching ------------------------------------------------------------------------


def _tokens(argv: Sequence[str]) -> list[str]:
    """argv with any `sh -c STRING` / `cmd /c STRING` split into words too."""
    out = list(argv)
    for i, a in enumerate(argv[:-1]):
        if a in ("-c", "/c", "/C", "-lc") and os.path.basename(argv[0]) in SHELLS:
            import shlex

            try:
                out += shlex.split(argv[i + 1])
            except ValueError:
                out += argv[i + 1].split()
            break
    return out


def _base(token: str) -> str:
    return _VERSION_SUFFIX.sub("", token.rstrip("/")).rsplit("/", 1)[-1].rsplit("\\", 1)[-1]


def looks_like_mcp(argv: Sequence[str]) -> bool:
    """Argv that names an MCP server (`@modelcontextprotocol/server-x`, `mcp-server-x`,
    `x-mcp`, `fastmcp` ...): a guess, never more."""
    joined = " ".join(argv).lower()
    if "mcp" not in joined and "modelcontextprotocol" not in joined:
        return False  # the cheap answer for nearly every process on a machine
    for t in _tokens(argv):
        if t.startswith("-") or len(t) > 512:
            continue
        if "@modelcontextprotocol/server-" in t:
            return True
        if _MCP_WORD.match(_base(t)):
            return True
    return False


def _is_guard(argv: Sequence[str]) -> bool:
    bases = [os.path.basename(a) for a in argv[:4]]
    return ("mcp-tether" in bases or "mcp_tether" in argv[:4]) and "run" in argv[:6]


def _runner_of(argv: Sequence[str]) -> str | None:
    """The package runner this argv starts a server through (npx, uvx, ...), or None."""
    words = list(argv[:2])
    if len(argv) > 2 and os.path.basename(argv[0]) in SHELLS and argv[1] in ("-c", "/c", "-lc"):
        import shlex

        try:
            words = shlex.split(argv[2])[:2]
        except ValueError:
            words = argv[2].split()[:2]
    for t in words:
        b = os.path.basename(t)
        if b.endswith(".exe") or b.endswith(".cmd"):
            b = b.rsplit(".", 1)[0]
        if b in RUNNERS:
            return b
    return None


@dataclass(slots=True)
class _Matcher:
    host: str
    name: str
    path: str
    cmd: str
    sig: list[str]  # the entry's non-flag args, in order

    @classmethod
    def of(cls, entry: Any) -> _Matcher:
        args = [str(a) for a in (getattr(entry, "args", None) or [])]
        return cls(str(getattr(entry, "host", "") or ""), str(getattr(entry, "name", "") or ""),
                   str(getattr(entry, "path", "") or ""),
                   _base(str(getattr(entry, "command", "") or "")),
                   [a for a in args if not a.startswith("-")])

    def matches(self, toks: list[str], bases: set[str]) -> bool:
        if not self.cmd:
            return False
        if self.cmd not in bases and not (self.cmd == "npx" and "npm" in bases):
            return False
        if not self.sig:
            return True
        # The entry's arguments, in order, among the process's words. npx shows itself
        # as `npm exec pkg`; a path argument may appear resolved: compare basenames too.
        i = 0
        for t in toks:
            s = self.sig[i]
            if t == s or _base(t) == _base(s):
                i += 1
                if i == len(self.sig):
                    return True
        return False


def _load_config(home: str | None, cwd: str | None, config: str | None,
                 servers: Iterable[Any] | None) -> tuple[list[_Matcher], list[str]]:
    """Matchers for every stdio server of every host config found (plus `config`)."""
    if servers is not None:
        entries: list[Any] = list(servers)
        errors: list[Any] = []
    else:
        try:
            from mcp_tether import hosts  # config discovery and reading live there
        except ImportError:
            return [], []
        from pathlib import Path

        kwargs: dict[str, Any] = {}
        if home is not None:
            kwargs["home"] = Path(home)
        if cwd is not None:
            kwargs["cwd"] = Path(cwd)
        entries, errors = [], []
        calls: list[dict[str, Any]] = [kwargs]
        if config is not None:
            calls.append({"config": config})
        for kw in calls:
            try:
                got, errs = hosts.configured_servers(**kw)
            except Exception as exc:  # noqa: BLE001  # config trouble must not stop the scan
                errors.append(f"host configs: {exc}")
                continue
            entries += got
            errors += errs
    matchers = [
        _Matcher.of(e) for e in entries
        if getattr(e, "transport", "stdio") == "stdio" and getattr(e, "command", None)
        and not getattr(e, "disabled", False)
    ]
    return matchers, [str(e) for e in errors]


# ----- the result ---------------------------------------------------------------------


@dataclass(slots=True)
class Member:
    ident: ProcessId
    ppid: int
    pgid: int
    comm: str
    argv: list[str]
    rss_bytes: int
    cpu_seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {"pid": self.ident.pid, "start": self.ident.start, "ppid": self.ppid,
                "pgid": self.pgid, "name": self.comm, "command": self.argv,
                "rss_bytes": self.rss_bytes, "cpu_seconds": round(self.cpu_seconds, 2)}


@dataclass
class Server:
    """One MCP server process tree: the root (outermost wrapper) and its descendants."""

    ident: ProcessId
    uid: int | None
    user: str
    age_seconds: float
    command: list[str]
    found_by: list[str]  # "config", "host", "guess"
    config: list[dict[str, str]]  # matching config entries: host, name, path
    host: str | None  # the live host it runs under, if any
    parent: dict[str, Any]
    stdin: Stdin
    evidence: list[str]
    members: list[Member]
    writers: list[int] = field(default_factory=list)  # holders of stdin's write end

    @property
    def pid(self) -> int:
        return self.ident.pid

    @property
    def orphan(self) -> bool:
        return PARENT_GONE in self.evidence or STDIN_NO_WRITER in self.evidence

    @property
    def state(self) -> str:
        return "orphan" if self.orphan else "live"

    @property
    def guess(self) -> bool:
        return self.found_by == ["guess"]

    @property
    def rss_bytes(self) -> int:
        return sum(m.rss_bytes for m in self.members)

    @property
    def cpu_seconds(self) -> float:
        return sum(m.cpu_seconds for m in self.members)

    @property
    def cpu_percent(self) -> float:
        """Average over its lifetime (no sampling interval: the scan never waits)."""
        return 100.0 * self.cpu_seconds / self.age_seconds if self.age_seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "start": self.ident.start,
            "state": self.state,
            "evidence": list(self.evidence),
            "guess": self.guess,
            "found_by": list(self.found_by),
            "user": self.user,
            "uid": self.uid,
            "age_seconds": round(self.age_seconds, 1),
            "rss_bytes": self.rss_bytes,
            "cpu_seconds": round(self.cpu_seconds, 2),
            "cpu_percent": round(self.cpu_percent, 2),
            "command": self.command,
            "config": self.config,
            "host": self.host,
            "parent": self.parent,
            "stdin": self.stdin.to_dict(),
            "stdin_writers": self.writers,
            "members": [m.to_dict() for m in self.members],
        }


@dataclass
class ScanResult:
    servers: list[Server]  # orphans first, then live; larger first within each
    scanned: int
    unreadable: int
    hosts_running: list[str]
    config_errors: list[str]
    elapsed: float

    @property
    def orphans(self) -> list[Server]:
        return [s for s in self.servers if s.orphan]

    @property
    def live(self) -> list[Server]:
        return [s for s in self.servers if not s.orphan]

    def totals(self) -> dict[str, int]:
        orph = self.orphans
        return {
            "servers": len(self.servers),
            "orphans": len(orph),
            "live": len(self.servers) - len(orph),
            "orphan_rss_bytes": sum(s.rss_bytes for s in orph),
            "live_rss_bytes": sum(s.rss_bytes for s in self.servers if not s.orphan),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "servers": [s.to_dict() for s in self.servers],
            "totals": self.totals(),
            "hosts_running": self.hosts_running,
            "config_errors": self.config_errors,
            "scanned": self.scanned,
            "unreadable": self.unreadable,
            "elapsed_seconds": round(self.elapsed, 4),
        }


# ----- the scan -------------------------------------------------------------------------


def _uptime() -> float:
    try:
        with open("/proc/uptime") as fh:
            return float(fh.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0.0


def _age(p: Proc, uptime: float, now: float) -> float:
    if platform.has_proc():
        return max(0.0, uptime - p.start / platform.clock_ticks())
    return max(0.0, now - p.start)  # psutil: start is an epoch create_time


def _owner(pid: int) -> int | None:
    try:
        return os.stat(f"/proc/{pid}").st_uid if platform.has_proc() else None
    except OSError:
        return None


_users: dict[int, str] = {}


def _username(uid: int | None) -> str:
    if uid is None:
        return "?"
    if uid not in _users:
        try:
            import pwd

            _users[uid] = pwd.getpwuid(uid).pw_name
        except (ImportError, KeyError):
            _users[uid] = str(uid)
    return _users[uid]


def _same_stdin(a: int, b: int) -> bool:
    try:
        return os.readlink(f"/proc/{a}/fd/0") == os.readlink(f"/proc/{b}/fd/0")
    except OSError:
        return False


def scan(
    *,
    home: str | None = None,
    cwd: str | None = None,
    config: str | None = None,
    servers: Iterable[Any] | None = None,
    users: set[int] | None = None,
) -> ScanResult:
    """Find MCP stdio server trees and their orphan evidence. Sends nothing.

    `servers` replaces config discovery with the given entries (tests, `--config`
    callers that already read them); `users` limits the result to those uids.
    """
    t0 = time.monotonic()
    matchers, config_errors = _load_config(home, cwd, config, servers)
    procs, unreadable = _snapshot(_comm_filter(m.cmd for m in matchers))
    me = os.getpid()
    procs.pop(me, None)
    uptime, now = _uptime(), time.time()

    kids: dict[int, list[int]] = {}
    hosts: dict[int, str] = {}
    for p in procs.values():
        kids.setdefault(p.ppid, []).append(p.pid)
        h = classify_host(_argv(p), p.comm) if p.argv is not None else None
        if h is not None:
            hosts[p.pid] = h

    # 1. Candidates and how they were found.
    found: dict[int, list[str]] = {}
    matched: dict[int, list[_Matcher]] = {}
    cmd_names = {m.cmd for m in matchers} | ({"npm"} if any(m.cmd == "npx" for m in matchers)
                                             else set())
    for p in procs.values():
        if not p.argv or p.pid in hosts:  # unread (ruled out by name), empty, or a host
            continue
        how: list[str] = []
        if matchers:
            bases = {_base(t) for t in p.argv[:8]}
            if bases & cmd_names or os.path.basename(p.argv[0]) in SHELLS:
                toks = _tokens(p.argv)
                bases |= {_base(t) for t in toks}
                hits = [m for m in matchers if m.matches(toks, bases)]
                if hits:
                    matched[p.pid] = hits
                    how.append("config")
        if p.ppid in hosts and (_runner_of(p.argv) or _is_guard(p.argv)):
            how.append("host")
        if looks_like_mcp(p.argv):
            how.append("guess")
        if how:
            found[p.pid] = how

    # 2. Group each candidate with the wrappers above it; the outermost is the root.
    def is_wrapper(parent: Proc, child: Proc) -> bool:
        if parent.pid in hosts or parent.pid <= 1 or parent.comm in SUBREAPERS:
            return False
        if parent.pid in found:
            return True
        pargv = _argv(parent)
        b = os.path.basename(pargv[0]) if pargv else ""
        wrapperish = (b in RUNNERS or _is_guard(pargv) or INTERPRETERS_RE.match(b)
                      or (b in SHELLS and "-c" in pargv[1:3]))
        # A wrapper passes its own stdin through; a client (an inspector, a test
        # harness) gives the server a fresh pipe. Same fd 0 = same conversation.
        return bool(wrapperish) and _same_stdin(parent.pid, child.pid)

    roots: set[int] = set()
    for pid in found:
        cur = procs[pid]
        while True:
            par = procs.get(cur.ppid)
            if par is None or not is_wrapper(par, cur):
                break
            cur = par
        roots.add(cur.pid)

    def tree(root: int) -> list[int]:
        """root and its descendants, not descending into another server's root (a
        server started by a non-wrapper under this one is its own entry)."""
        out, stack = [root], [root]
        while stack:
            for c in kids.get(stack.pop(), ()):
                if c in roots:
                    continue
                out.append(c)
                stack.append(c)
        return out

    # 3. Evidence, per root.
    running_hosts = sorted(set(hosts.values()))
    diag = _UnixDiag()
    out: list[Server] = []
    try:
        for r in roots:
            root = procs[r]
            uid = _owner(r)
            if users is not None and uid not in users:
                continue
            members_pids = tree(r)
            members = [
                Member(procs[m].ident, procs[m].ppid, procs[m].pgid, procs[m].comm,
                       _argv(procs[m]), procs[m].rss_bytes,
                       procs[m].cpu_ticks / platform.clock_ticks())
                for m in members_pids if m in procs
            ]
            how = sorted({h for m in members_pids for h in found.get(m, ())},
                         key=("config", "host", "guess").index)
            cfg = {(x.host, x.name, x.path): x for m in members_pids for x in matched.get(m, ())}
            # Which live host is it under (any ancestor)?
            host = None
            a = procs.get(root.ppid)
            seen = 0
            while a is not None and seen < 64:
                if a.pid in hosts:
                    host = hosts[a.pid]
                    break
                a = procs.get(a.ppid)
                seen += 1
            par = procs.get(root.ppid)
            parent = {
                "pid": root.ppid,
                "name": par.comm if par else None,
                "alive": par is not None,
                "host": hosts.get(root.ppid),
            }
            evidence: list[str] = []
            # ppid 0 is a namespace's own init (or a parent outside our namespace): no claim.
            if host is None and (root.ppid == 1 or (par is not None and par.comm in SUBREAPERS)):
                evidence.append(PARENT_GONE)
            stdin = _read_stdin(r, diag)
            if stdin.writer == "no":
                evidence.append(STDIN_NO_WRITER)
            cfg_hosts = {c[0] for c in cfg if c[0]}
            if host is None and cfg_hosts and not (cfg_hosts & set(running_hosts)):
                evidence.append(HOST_GONE)
            writers: list[int] = []
            if PARENT_GONE in evidence and stdin.kind == "pipe" and stdin.writer == "yes" \
                    and stdin.inode is not None:
                writers = _pipe_holders(stdin.inode, set(members_pids))
                if writers:
                    stdin.detail = "write end held by " + ", ".join(
                        f"{w} ({procs[w].comm})" if w in procs else str(w) for w in writers)
            out.append(Server(
                ident=root.ident, uid=uid, user=_username(uid),
                age_seconds=_age(root, uptime, now), command=_argv(root), found_by=how,
                config=[{"host": h, "name": n, "path": pth} for (h, n, pth) in cfg],
                host=host, parent=parent, stdin=stdin, evidence=evidence, members=members,
                writers=writers,
            ))
    finally:
        diag.close()
    out.sort(key=lambda s: (not s.orphan, -s.rss_bytes, s.pid))
    return ScanResult(out, len(procs), unreadable, running_hosts, config_errors,
                      time.monotonic() - t0)
