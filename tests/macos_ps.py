#!/usr/bin/env -S python3 -I -S
"""A `ps` that prints as macOS's does, answered from Linux's /proc: a test double.

The Node package reads processes on macOS with `/bin/ps` (node/lib/platform/ps.cjs). This program
stands in for it on Linux, selected by the package's test switch (MCP_TETHER_TEST_PLATFORM=
darwin, MCP_TETHER_TEST_PS=<this file>), so the macOS path of the package runs against
real processes. It prints what Apple's ps (adv_cmds: ps/keyword.c, ps/print.c) prints for
the options and keywords the package uses:

    ps [-A] [-E] [-ww] -o KEY= [-o KEY=]... [-p PID[,PID...]]

Keywords: pid, ppid, pgid (%5d); ucomm (the accounting name: "ps" for itself); tt ("??"
for no terminal, else the name without "tty", then " " or "-"); state (its first letter:
Z for a zombie, T stopped, R running, S sleeping); lstart (strftime "%c" in the local
time zone, TZ honoured, whole seconds, padded to 28); command (argv joined by spaces;
with -E and the same user or root, the environment after it, each string separated by a
space; "(comm)" where the arguments cannot be read: another user's process, a zombie).
A header is printed only when a keyword has a non-empty one ("KEY=" has none); columns
are separated by one space. With -p and no such process, nothing is printed and the
status is 1 (as Apple's ps).

What it does not model: macOS's own processes (launchd, kernel_task), its tty names,
`state`'s flag letters, strvis's exact escapes (control characters are shown as "^X"),
and any option not listed above (a usage error, status 1).
"""

import os
import sys
import time

WIDTH = {"pid": 5, "ppid": 5, "pgid": 5, "tt": 5, "state": 4, "lstart": 28, "command": 16,
         "ucomm": 16}
HEADER = {"pid": "PID", "ppid": "PPID", "pgid": "PGID", "tt": "TT ", "state": "STAT",
          "lstart": "STARTED", "command": "COMMAND", "ucomm": "UCOMM"}
LJUST = ("lstart", "command", "ucomm")  # left-justified (ps/keyword.c's LJUST); the rest right
TICKS = os.sysconf("SC_CLK_TCK")


def usage(msg: str) -> None:
    sys.stderr.write(f"ps: {msg}\n")
    sys.exit(1)


def boot_time() -> int:
    with open("/proc/stat", "rb") as fh:
        for line in fh:
            if line.startswith(b"btime "):
                return int(line.split()[1])
    return 0


def shown(text: str) -> str:
    return "".join(c if c >= " " and c != "\x7f" else "^" + chr(ord(c) ^ 0x40) for c in text)


def record(pid: int, env: bool, btime: int) -> dict[str, object] | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        uid = os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
    comm = data[data.index(b"(") + 1 : data.rindex(b")")].decode("utf-8", "replace")
    f = data[data.rindex(b")") + 2 :].split()
    state = f[0].decode()
    me = os.geteuid()
    command = f"({comm})"
    if state not in ("Z", "X") and (me == 0 or me == uid):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                argv = [a for a in fh.read().split(b"\0")[:-1]]
            strings = argv
            if env and argv:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    strings = argv + [e for e in fh.read().split(b"\0") if e]
            if argv:
                command = shown(b" ".join(strings).decode("utf-8", "replace"))
        except OSError:
            pass
    if pid == os.getpid():
        comm = "ps"  # macOS's ps is the executable "ps": its accounting name
    return {"pid": pid, "ppid": int(f[1]), "pgid": int(f[2]), "tty": int(f[4]), "comm": comm,
            "state": {"X": "Z", "t": "T"}.get(state, state if state in "ZTRS" else "S"),
            "start": btime + int(f[19]) // TICKS, "command": command}


def column(key: str, r: dict[str, object], last: bool) -> str:
    w = WIDTH[key]
    if key in ("pid", "ppid", "pgid"):
        return f"{r[key]:>{w}}"
    if key == "tt":
        name = f"s{int(str(r['tty'])) & 0xFF:03d}" if r["tty"] else "??"
        return f"{name:>{w - 1}} "
    if key == "state":
        return str(r["state"]) if last else f"{r['state']:<{w}}"
    if key == "lstart":
        text = time.strftime("%c", time.localtime(int(str(r["start"]))))
        return text if last else f"{text:<{w}}"
    if key == "ucomm":
        return str(r["comm"]) if last else f"{r['comm']:<{w}}"
    return str(r["command"])


def main(argv: list[str]) -> int:
    keys: list[tuple[str, str]] = []
    pids: list[int] | None = None
    every = env = False
    args = iter(argv)
    for a in args:
        if a == "-o":
            for spec in next(args, "").replace(",", " ").split():
                name, _, header = spec.partition("=")
                if name not in WIDTH:
                    usage(f"{name}: keyword not found")
                keys.append((name, header if "=" in spec else HEADER[name]))
        elif a == "-p":
            pids = [int(p) for p in next(args, "").split(",") if p.strip().isdigit()]
        elif a.startswith("-") and set(a[1:]) <= set("AEw"):
            every |= "A" in a
            env |= "E" in a
        else:
            usage(f"illegal option {a}")
    if not keys:
        usage("no keywords")
    btime = boot_time()
    wanted = pids if pids is not None else sorted(
        int(n) for n in os.listdir("/proc") if n.isdigit()) if every else []
    rows = [r for r in (record(p, env, btime) for p in wanted) if r is not None]
    rows.sort(key=lambda r: (r["tty"], r["pid"]))
    out = []
    if any(h for _k, h in keys):
        out.append(" ".join(h if k in LJUST and i == len(keys) - 1 else
                            f"{h:<{WIDTH[k]}}" if k in LJUST else f"{h:>{WIDTH[k]}}"
                            for i, (k, h) in enumerate(keys)))
    for r in rows:
        out.append(" ".join(column(k, r, i == len(keys) - 1) for i, (k, _h) in enumerate(keys)))
    sys.stdout.write("".join(line + "\n" for line in out))
    return 1 if pids is not None and not rows else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
