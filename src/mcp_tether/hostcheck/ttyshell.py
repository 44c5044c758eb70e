"""A terminal's shell, standing in for bash when the host check runs a host under a pty.

    python ttyshell.py FD HOST-ARGV...

Run as a plain script (stdlib only), as the pty's session leader (the keeper spawns it in
a new session with the pty's slave on fds 0-2). It does what an interactive job-control
shell does with one foreground command, so that a host under a pty meets the terminal
it would meet in real life:

- takes the pty as its controlling terminal, starts the host in a process group of its
  own and makes that group the terminal's foreground group (Ctrl-C typed on the
  terminal would reach the host's whole group, as in a real terminal);
- writes the host's pid on FD, then closes FD;
- when the terminal hangs up (the kernel sends SIGHUP to the session leader: us), sends
  SIGHUP and SIGCONT to the host's process group and exits 129, as bash does for its
  jobs when its terminal closes;
- when the host exits, takes the terminal back and exits with the host's status (128+N
  for a signal), so that its own exit hangs nothing up: a host that ends by itself is
  not helped by a SIGHUP from the kernel to the group it leaves behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import sys
import termios


def main(argv: list[str]) -> None:
    report = int(argv[0])
    command = argv[1:]
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)  # tcsetpgrp from a background group
    for sig in (signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP):
        signal.signal(sig, signal.SIG_IGN)  # a shell ignores these; its job does not
    pid = os.fork()
    if pid == 0:
        try:
            os.setpgid(0, 0)
            os.tcsetpgrp(0, os.getpgrp())
            for sig in (signal.SIGTTOU, signal.SIGINT, signal.SIGQUIT, signal.SIGTSTP):
                signal.signal(sig, signal.SIG_DFL)
            os.close(report)
            os.execvp(command[0], command)
        except OSError as exc:
            sys.stderr.write(f"ttyshell: {command[0]}: {exc.strerror}\n")
        os._exit(127)
    # Both sides set it: no race with the terminal's signals. EACCES: the child exec'd.
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)
    os.write(report, f"{pid}\n".encode())
    os.close(report)

    def hang_up(signum: int, frame: object) -> None:
        for sig in (signal.SIGHUP, signal.SIGCONT):
            with contextlib.suppress(OSError):  # the group is gone
                os.killpg(pid, sig)
        os._exit(128 + signal.SIGHUP)

    signal.signal(signal.SIGHUP, hang_up)
    _, raw = os.waitpid(pid, 0)  # retried after a signal handler that returns (PEP 475)
    with contextlib.suppress(OSError):  # the terminal is gone already
        os.tcsetpgrp(0, os.getpgrp())
    status = os.waitstatus_to_exitcode(raw)
    os._exit(128 - status if status < 0 else status)


if __name__ == "__main__":
    main(sys.argv[1:])
