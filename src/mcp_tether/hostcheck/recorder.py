"""The recorder: an MCP stdio server that writes down what its host does to it.

    python recorder.py --events DIR [--role wrapper] [--eof stay|exit] [--signals die|stay]
                       [--hold tools/list|initialize] [--no-grandchild]

Run as a plain script (stdlib only, no mcp_tether import), so that any host can start
it from any folder. It answers `initialize` (and `server/discover`, offering only the
versions it speaks, so a 2026-07-28 client falls back to `initialize`), `ping`,
`tools/list` and `tools/call` (one tool, `echo`) like a normal server, and records, one
JSON line per event with its monotonic (`t`, CLOCK_MONOTONIC, comparable between
processes of one machine) and wall (`wall`) instants:

- `start` (pid, ppid, pgid, sid, argv), `initialize`, `initialized` (the host's
  notification: the handshake is complete), every request method (`request`), and
  each `tools/call` it answered (`call`: the tool and the text it echoed back);
- `hold` (point) and `release`: with `--hold tools/list` the answer to the first
  `tools/list` waits, with `--hold initialize` the answer to `initialize` does, until the
  driver releases the hold (see below), so that a one-shot host is still waiting for
  the server when the driver's trigger comes, instead of already ending by itself;
- `stdin-eof` (a read returned end-of-file) or `stdin-hangup` (POLLHUP without EOF);
- `stdout-closed`: every reader of its stdout is gone (POLLERR/POLLHUP on fd 1: what a
  write would meet as EPIPE, seen without writing anything that is not protocol);
- `signal` (name) for SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2 and SIGPIPE; after
  recording, the terminating ones end the process by the default action, as an
  ordinary server would die of them (`--signals die`, the default), or are only
  recorded (`--signals stay`: the host's whole ladder shows, up to its SIGKILL);
- `parent-changed` (old and new ppid, at the instant the parent's pidfd reports its
  exit, else at the next look at getppid());
- `second-copy`: another recorder of the same events folder was alive when this one
  started (a host that started the server twice, or reconnected without ending it);
- `child-exit` (pid, status) of its grandchild, when it reaps it.

Guarantees:
- Nothing but JSON-RPC messages is ever written to stdout; diagnostics go nowhere.
- Events go to `DIR/<role>-<pid>.jsonl` (appended, one write per line) and, when
  `DIR/events.fifo` exists and has a reader, to that FIFO too, so that the driver's
  waits are event-timed. A full or readerless FIFO never blocks the recorder.
- At EOF the server stays (`--eof stay`, the default: a server that needs its host's
  whole ladder, as the TypeScript SDK 1.x servers do) or exits (`--eof exit`).
- The grandchild (`--role grandchild`, started by the server unless `--no-grandchild`)
  sits behind the server as a real server sits behind `npx` or `sh -c`: same session
  and process group, the same stdin and stderr (its stdout is /dev/null: it never
  speaks the protocol). It records the same lifecycle events and never exits by itself.
- The wrapper (`--role wrapper`) stands where `sh -c 'SERVER; true'` or npm stand: it
  starts the server (the same arguments, without `--role`) with its own stdin, stdout
  and stderr, forwards no signal, records what it gets, and exits 0 when the server
  has exited (a fatal signal, under `--signals die`, ends it at once: the server stays).
- Neither the grandchild nor the wrapper reads stdin (a read would steal the host's
  messages from the server): they see its end as POLLHUP (`stdin-hangup`).
- A hold ends when the driver closes its end of `DIR/release.fifo` (POLLHUP for a
  reader that opened it before), and the driver creates `DIR/released` before that (for
  a recorder that opens it after). With neither file there is no hold.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time

RECORDED = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2", "SIGPIPE")
# After recording these, die by the default action (exit status 128+N), as servers do.
FATAL = ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT")
TICK = 0.2  # seconds between looks at getppid() when no pidfd can watch the parent
PROTOCOL = "2025-11-25"
SUPPORTED = (PROTOCOL, "2025-06-18", "2025-03-26", "2024-11-05")


class Recorder:
    def __init__(self, folder: str, role: str, eof: str, signals: str = "die",
                 hold: str = "") -> None:
        self.folder = folder
        self.role = role
        self.eof = eof
        self.die = signals == "die"
        self.hold = hold if role == "server" else ""
        self.held: dict[str, object] | None = None  # the request whose answer waits
        self.queue: list[dict[str, object]] = []  # what came while it waited, in order
        self.release_fd = -1
        if self.hold:
            with contextlib.suppress(OSError):  # no driver: no hold
                self.release_fd = os.open(os.path.join(folder, "release.fifo"),
                                          os.O_RDONLY | os.O_NONBLOCK)
        self.pid = os.getpid()
        self.ppid = os.getppid()
        self.log_fd = os.open(os.path.join(folder, f"{role}-{self.pid}.jsonl"),
                              os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.fifo = -1
        with contextlib.suppress(OSError):  # no driver listening: the file is enough
            self.fifo = os.open(os.path.join(folder, "events.fifo"), os.O_WRONLY | os.O_NONBLOCK)
        self.sig_r, sig_w = os.pipe()
        os.set_blocking(sig_w, False)
        os.set_blocking(self.sig_r, False)
        signal.set_wakeup_fd(sig_w, warn_on_full_buffer=False)
        for name in RECORDED:
            if hasattr(signal, name):
                signal.signal(getattr(signal, name), lambda *_: None)
        self.parent_fd = self._pidfd(self.ppid)
        self.stdin_open = True
        self.stdout_open = role == "server"
        self.buf = b""
        self.child: int | None = None

    @staticmethod
    def _pidfd(pid: int) -> int:
        try:
            return os.pidfd_open(pid)
        except (AttributeError, OSError):
            return -1

    def note(self, what: str, **extra: object) -> None:
        ev = {"t": time.monotonic(), "wall": time.time(), "pid": self.pid, "role": self.role,
              "what": what, **extra}
        line = (json.dumps(ev) + "\n").encode()
        os.write(self.log_fd, line)
        if self.fifo >= 0:
            # < PIPE_BUF: one atomic write. A full FIFO or a gone reader: the file has it.
            with contextlib.suppress(OSError):
                os.write(self.fifo, line)

    # -- the protocol -----------------------------------------------------------------
    def send(self, msg: dict[str, object]) -> None:
        if not self.stdout_open:
            return
        data = (json.dumps(msg) + "\n").encode()
        try:
            while data:
                data = data[os.write(1, data):]
        except BrokenPipeError:
            self.stdout_open = False
            self.note("stdout-closed", how="EPIPE")
        except OSError as exc:
            self.stdout_open = False
            self.note("stdout-closed", how=exc.strerror or "error")

    def released(self) -> bool:
        return self.release_fd < 0 or os.path.exists(os.path.join(self.folder, "released"))

    def on_release(self) -> None:
        os.close(self.release_fd)
        self.release_fd = -1
        self.note("release")
        held, self.held = self.held, None
        if held is not None:
            self.handle(held, holding=False)
        queue, self.queue = self.queue, []
        for msg in queue:
            self.handle(msg)

    def handle(self, msg: dict[str, object], holding: bool = True) -> None:
        method, mid = msg.get("method"), msg.get("id")
        if self.held is not None:
            self.queue.append(msg)
            return
        if holding and self.hold and method == self.hold and mid is not None:
            self.hold = ""  # the first one only
            self.note("request", method=method)
            self.note("hold", point=method)
            if not self.released():
                self.held = msg
                return
            self.note("release", how="already released")
            holding = False
        if method == "notifications/initialized":
            self.note("initialized")
            return
        if mid is None:
            return  # another notification
        if holding:  # not recorded twice for a request that was held
            self.note("request", method=method)
        info = {"name": "mcp-tether-recorder", "version": "1"}
        if method == "initialize":
            params = msg.get("params") or {}
            asked = params.get("protocolVersion") if isinstance(params, dict) else None
            # A version we speak is echoed; for any other we offer ours, as the lifecycle
            # says (a newer one would promise result fields this server does not send).
            version = asked if asked in SUPPORTED else PROTOCOL
            self.note("initialize")
            result: object = {"protocolVersion": version, "serverInfo": info,
                              "capabilities": {"tools": {}}}
        elif method == "server/discover":
            # Only the versions above are offered, none of them stateless: a client goes
            # on to `initialize`, whose notification is the handshake's end.
            self.note("discover")
            result = {"serverInfo": info, "capabilities": {"tools": {}},
                      "supportedVersions": list(SUPPORTED)}
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "description": "Echo the text back.",
                                 "inputSchema": {"type": "object", "properties": {
                                     "text": {"type": "string"}}}}]}
        elif method == "tools/call":
            params = msg.get("params") or {}
            args = params.get("arguments", {}) if isinstance(params, dict) else {}
            text = str(args.get("text", "")) if isinstance(args, dict) else ""
            # Which copy answered which call: the text names the caller (a stand-in
            # model's calls carry "AGENT/STEP/N").
            self.note("call", tool=str(params.get("name", "")) if isinstance(params, dict)
                      else "", text=text[:200])
            result = {"content": [{"type": "text", "text": text}]}
        else:
            self.send({"jsonrpc": "2.0", "id": mid,
                       "error": {"code": -32601, "message": f"method not found: {method}"}})
            return
        self.send({"jsonrpc": "2.0", "id": mid, "result": result})

    def read_stdin(self) -> None:
        try:
            chunk = os.read(0, 65536)
        except BlockingIOError:
            return
        except OSError as exc:
            self.stdin_open = False
            self.note("stdin-error", error=exc.strerror)
            return
        if not chunk:
            self.stdin_open = False
            self.note("stdin-eof")
            if self.eof == "exit":
                self.note("exit", status=0)
                os._exit(0)
            return
        self.buf += chunk
        while b"\n" in self.buf:
            line, self.buf = self.buf.split(b"\n", 1)
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if isinstance(msg, dict):
                self.handle(msg)

    # -- lifecycle --------------------------------------------------------------------
    def start_child(self, argv: list[str], quiet: bool) -> None:
        """Fork and exec `argv` (our own script) in our group and session; `quiet`: its
        stdout is /dev/null (never a second writer of the protocol stream)."""
        pid = os.fork()
        if pid == 0:
            try:
                if quiet:
                    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
                signal.set_wakeup_fd(-1)
                for name in RECORDED:
                    if hasattr(signal, name):
                        signal.signal(getattr(signal, name), signal.SIG_DFL)
                os.execv(argv[0], argv)
            finally:
                os._exit(127)
        self.child = pid

    def on_signals(self) -> None:
        try:
            data = os.read(self.sig_r, 512)
        except BlockingIOError:
            return
        for num in data:
            if num == signal.SIGCHLD:
                continue
            name = signal.Signals(num).name
            self.note("signal", signal=name)
            if name in FATAL and self.die:
                signal.signal(num, signal.SIG_DFL)
                os.kill(self.pid, num)
                time.sleep(1)  # the default action ends us at the kill; never reached
                os._exit(128 + num)

    def reap(self) -> None:
        if self.child is None:
            return
        try:
            pid, raw = os.waitpid(self.child, os.WNOHANG)
        except ChildProcessError:
            self.child = None
            return
        if pid:
            status = os.waitstatus_to_exitcode(raw)
            self.note("child-exit", child=pid, status=128 - status if status < 0 else status)
            self.child = None
            if self.role == "wrapper":  # `sh -c 'SERVER; true'`: done when the server is
                self.note("exit", status=0)
                os._exit(0)

    def check_parent(self) -> None:
        now = os.getppid()
        if now != self.ppid:
            self.note("parent-changed", old=self.ppid, new=now)
            self.ppid = now
            if self.parent_fd >= 0:
                os.close(self.parent_fd)
            self.parent_fd = self._pidfd(now)

    def others(self) -> list[int]:
        out = []
        for name in os.listdir(self.folder):
            if not name.startswith(f"{self.role}-") or not name.endswith(".jsonl"):
                continue
            try:
                pid = int(name[len(self.role) + 1:-6])
            except ValueError:
                continue
            if pid != self.pid and os.path.exists(f"/proc/{pid}") and _alive(pid):
                out.append(pid)
        return out

    def run(self, child: list[str] | None) -> None:
        """`child`: the command of the process this one starts (the grandchild behind
        the server, the server behind the wrapper), or None."""
        self.note("start", ppid=self.ppid, pgid=os.getpgrp(), sid=os.getsid(0), argv=sys.argv)
        others = self.others()
        if others:
            self.note("second-copy", others=others)
        if child is not None:
            signal.signal(signal.SIGCHLD, lambda *_: None)
            self.start_child(child, quiet=self.role == "server")
            self.note("grandchild" if self.role == "server" else "server", child=self.child)
        reads = self.role == "server"
        if reads:
            os.set_blocking(0, False)
        poll = select.poll()
        poll.register(self.sig_r, select.POLLIN)
        while True:
            fds = {self.sig_r}
            if self.stdin_open:
                # Only the server reads; the others see the end as POLLHUP (events 0).
                poll.register(0, select.POLLIN | getattr(select, "POLLRDHUP", 0) if reads
                              else 0)
                fds.add(0)
            if self.held is not None and self.release_fd >= 0:
                poll.register(self.release_fd, select.POLLIN)
                fds.add(self.release_fd)
            if self.stdout_open:
                poll.register(1, 0)  # POLLERR/POLLHUP only: every reader is gone
                fds.add(1)
            if self.parent_fd >= 0:
                poll.register(self.parent_fd, select.POLLIN)
                fds.add(self.parent_fd)
            ready = dict(poll.poll(TICK * 1000 if self.parent_fd < 0 else None))
            for fd in fds - {self.sig_r}:
                poll.unregister(fd)
            self.on_signals()
            if 0 in ready:
                if reads:
                    self.read_stdin()
                elif ready[0] & (select.POLLHUP | select.POLLERR):
                    self.stdin_open = False
                    self.note("stdin-hangup")
            if self.held is not None and self.release_fd in ready:
                self.on_release()
            if 1 in ready and ready[1] & (select.POLLERR | select.POLLHUP):
                self.stdout_open = False
                self.note("stdout-closed", how="no reader (POLLERR)")
            if self.parent_fd in ready:
                os.close(self.parent_fd)
                self.parent_fd = -1
            self.check_parent()
            self.reap()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except (OSError, IndexError):
        return False


USAGE = ("usage: recorder.py --events DIR [--role wrapper] [--eof stay|exit] "
         "[--signals die|stay] [--hold tools/list|initialize] [--no-grandchild]\n")


def main(argv: list[str]) -> None:
    opts = {"--events": "", "--role": "server", "--eof": "stay", "--signals": "die",
            "--hold": "", "--generation": ""}
    grandchild = True
    rest: list[str] = []  # the arguments without --role: the wrapper's server gets them
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in opts and i + 1 < len(argv):
            opts[a] = argv[i + 1]
            if a != "--role":
                rest += argv[i:i + 2]
            i += 2
            continue
        if a == "--no-grandchild":
            grandchild = False
        rest.append(a)
        i += 1
    role, eof, sigs, hold = opts["--role"], opts["--eof"], opts["--signals"], opts["--hold"]
    if (not opts["--events"] or role not in ("server", "grandchild", "wrapper")
            or eof not in ("stay", "exit") or sigs not in ("die", "stay")
            or hold not in ("", "none", "tools/list", "initialize")):
        sys.stderr.write(USAGE)
        sys.exit(2)
    me = [sys.executable, os.path.abspath(__file__)]
    child: list[str] | None = None
    if role == "wrapper":
        child = [*me, *rest]
    elif role == "server" and grandchild:
        child = [*me, "--events", opts["--events"], "--role", "grandchild", "--signals", sigs]
    rec = Recorder(opts["--events"], role, eof, sigs, "" if hold == "none" else hold)
    rec.run(child)


if __name__ == "__main__":
    main(sys.argv[1:])
