"""The words every backend answers channel questions in: an fd's end and its far end.

A pipe or a socket has two ends; a process holds an end through a descriptor. The scan
asks three questions of a descriptor, which /proc, libproc and (later) Windows can each
answer: what end is this (`End`), where is its far end (`Far`), and who holds that far
end (`FarEnds.holders`).

Guarantees:
- `End.id` names one end: every descriptor, in any process, open on the same end has the
  same id, and no other descriptor has it. It is opaque: compared, never parsed, outside
  the backend that made it (Linux: the pipe's link and the fd's mode, or the socket's
  link; macOS: the kernel's handle of the end, `pipe_handle` or `soi_pcb`).
- `End.channel` is shared by both ends of one pipe (for a socket it is the socket's own
  id): what two descriptors are compared by to ask "the same pipe?".
- A `Far` says what the kernel shows now: `open` (with the far end's id where the backend
  can name it, and whether data still flows each way), `closed` (nobody holds the far end
  any more), `unconnected` (a listener or a datagram socket: no channel), or `unknown`,
  with why. Never a guess: a backend that cannot see answers `unknown`.
- A `Sock` says what a socket end is for (what the tree kill asks of a daemon: does it
  listen, did it accept this connection, and which socket of this machine is the other
  side of it); "" where the backend cannot tell, never a guess.
- Stdlib only; loaded by the channel modules, never on the start-up paths.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["End", "Far", "FdState", "Sock", "CHANNEL_KINDS", "OPEN", "CLOSED", "UNCONNECTED",
           "UNKNOWN", "kind_of_path", "tcp_text"]

OPEN, CLOSED, UNCONNECTED, UNKNOWN = "open", "closed", "unconnected", "unknown"
CHANNEL_KINDS = ("pipe", "socket")  # the kinds of end a stdio channel can be


class End(NamedTuple):
    """What one descriptor is open on (module docstring)."""

    kind: str  # pipe | socket | null (/dev/null) | tty | pty (a pseudo-terminal's master
    # side: what a terminal multiplexer holds) | file (anything else)
    id: str  # this end: equal for every descriptor open on it, in any process
    channel: str  # equal for both ends of one pipe; a socket's own id
    name: str  # what people read (the Linux link text, or the backend's own words)
    mode: str | None = None  # r | w | rw for a pipe end; None where not known
    inode: int | None = None  # the number the OS shows for the channel (Linux: inode)
    also: str = ""  # a second end the one descriptor holds (a Linux pipe opened rw)

    def holds(self, end_id: str) -> bool:
        """Is `end_id` (a far end's id) an end this descriptor holds?"""
        return end_id == self.id or (bool(self.also) and end_id == self.also)


class Far(NamedTuple):
    """The other side of an end, now (module docstring)."""

    state: str  # open | closed | unconnected | unknown
    id: str | None = None  # the far end, where the backend can name it
    recv: bool | None = None  # open: can data still reach this end (False: half-closed)
    send: bool | None = None  # open: is what this end writes still read by someone
    why: str = ""  # unknown: what could not be told


class Sock(NamedTuple):
    """What a socket end is for (module docstring)."""

    family: str  # unix | tcp | "" (another family, or not known)
    role: str  # listen | accepted (the server side of a connection: a connected stream
    # socket accepted from a listener) | client (any other connected one) | "" (not known)
    address: str = ""  # the name a UNIX socket is bound to ("" for none), or the address a
    # TCP listener listens on (`tcp_text`)
    peer: str | None = None  # the other side's end id, for a connection whose other side
    # is a socket of this machine (a UNIX peer; TCP over loopback); None: none seen


class FdState(NamedTuple):
    """How a descriptor was opened: enough to recognise a copy of another one."""

    access: str  # r | w | rw: the open file's access mode
    cloexec: bool  # this descriptor closes on exec
    file: tuple[object, ...]  # equal for two descriptors sharing one open file, by every
    # sign the backend reads (offset, flags, the file's identity)


PTY_MASTERS = ("/dev/ptmx", "/dev/pts/ptmx")  # the multiplexer device's names (macOS: the first)


def tcp_text(raw: bytes, port: int) -> str:
    """A TCP address as people write it: `127.0.0.1:8080`, `[::1]:8080`."""
    import ipaddress

    ip = ipaddress.ip_address(raw)
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


def kind_of_path(path: str) -> str:
    """The kind of end a file path is: null, pty (a master), tty or file."""
    if path == "/dev/null":
        return "null"
    if path in PTY_MASTERS:
        return "pty"
    if path.startswith(("/dev/pts/", "/dev/tty")):
        return "tty"
    return "file"
