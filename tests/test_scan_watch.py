"""`reap --watch` ends leaks as they appear and leaves the young and the allowed alone;
`reap --print-unit` prints a ready user service."""

from __future__ import annotations

import contextlib
import os
import plistlib
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mcp_tether.proc import SAME, compare, table, wait_gone
from polling import until
from scan_lab import DEADLINE, FAR_ENDS, Lab, needs_proc, run_cli

pytestmark = [pytest.mark.linux, needs_proc]

MIN_AGE = 6.0


class Lines:
    """The watcher's stdout, line by line, read on a thread (never blocks the test)."""

    def __init__(self, stream: object) -> None:
        self.lines: list[str] = []
        self._t = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._t.start()

    def _read(self, stream: object) -> None:
        for raw in stream:  # type: ignore[attr-defined]
            self.lines.append(raw.decode(errors="replace").rstrip("\n"))

    def all(self) -> list[str]:
        """Every line, once the stream ended (its writer exited)."""
        self._t.join(DEADLINE)
        return self.lines

    def has(self, *words: str) -> str | None:
        return next((ln for ln in list(self.lines) if all(w in ln for w in words)), None)


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_watch_ends_a_leak_that_appears_after_it_started_and_leaves_young_and_allowed_ones(
    lab: Lab,
) -> None:
    """1. a live SDK-identified server A, old enough; 2. the watcher starts; 3. A leaks
    and is ended with one line (what, evidence, memory); 4. a brand-new B and an allowed
    C leak: B (younger than --min-age) and C (--allow) are left alone, each with a line
    saying why; 5. SIGTERM stops the watcher cleanly."""
    a_script = lab.fake_server("a/server.py", sdk_import=True)
    a = lab.pair([sys.executable, str(a_script)])
    watcher = lab.popen(
        [sys.executable, "-m", "mcp_tether", "reap", "--watch", "--yes", "--interval", "0.2",
         "--min-age", str(MIN_AGE), "--allow", "*keep-me*", "--grace", "5"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = Lines(watcher.stdout)
    rec = table.record(a.server.pid)
    assert rec is not None
    until(lambda: table.age_seconds(rec) >= MIN_AGE, "A to be older than --min-age", DEADLINE)
    a.orphan()
    ended = until(lambda: out.has("ended", f"pid {a.server.pid} "), "the watcher to end A",
                  DEADLINE)
    assert "parent-gone" in ended and "reclaimed" in ended and "sdk mcp" in ended
    assert wait_gone(a.server, DEADLINE) is not None
    # B and C start only now: B is "younger than --min-age" only while it is, and ending
    # A (up to its grace) beside 4 CPU burners once took B past 4 s before a look saw it.
    b = lab.pair([sys.executable, str(lab.fake_server("b/server.py", sdk_import=True))])
    c = lab.pair([sys.executable, str(lab.fake_server("keep-me/server.py", sdk_import=True))])
    for p in (b, c):
        p.orphan()
    young = until(lambda: out.has(f"left: pid {b.server.pid} ", "younger"), "B left alone",
                  DEADLINE)
    allowed = until(lambda: out.has(f"left: pid {c.server.pid} ", "allowed"), "C left alone",
                    DEADLINE)
    assert young and allowed
    watcher.send_signal(signal.SIGTERM)
    assert watcher.wait(DEADLINE) == 128 + signal.SIGTERM
    assert watcher.stderr is not None
    assert watcher.stderr.read().decode().splitlines()[1:] == [
        "mcp-tether reap --watch: stopped by SIGTERM"]  # after its "scanning every" line
    assert compare(b.server) == SAME and compare(c.server) == SAME
    assert not out.has("ended", f"pid {b.server.pid} ") and not out.has(
        "ended", f"pid {c.server.pid} ")


def test_watch_needs_yes(capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = run_cli(capsys, "reap", "--watch")
    assert rc == 2 and "--yes" in err


def test_print_unit_systemd_runs_the_watcher_with_the_given_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run_cli(capsys, "reap", "--print-unit", "systemd", "--allow", "shared-*",
                         "--min-age", "120")
    assert rc == 0
    lines = out.splitlines()
    for section in ("[Unit]", "[Service]", "[Install]"):
        assert section in lines
    [exec_start] = [ln for ln in lines if ln.startswith("ExecStart=")]
    argv = shlex.split(exec_start.removeprefix("ExecStart="))  # systemd quotes alike
    assert argv[argv.index("reap"):] == ["reap", "--watch", "--yes", "--min-age", "120",
                                         "--allow", "shared-*"]
    assert os.path.isabs(argv[0])
    assert "WantedBy=default.target" in lines


def test_print_unit_launchd_is_a_valid_plist_running_the_watcher(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rc, out, _ = run_cli(capsys, "reap", "--print-unit", "launchd", "--interval", "15")
    assert rc == 0
    doc = plistlib.loads(out.encode())
    args = doc["ProgramArguments"]
    assert args[args.index("reap"):] == ["reap", "--watch", "--yes", "--interval", "15"]
    assert doc["KeepAlive"] is True and doc["RunAtLoad"] is True


def _can_mount_tmpfs() -> bool:
    if shutil.which("unshare") is None or shutil.which("nsenter") is None or os.geteuid() != 0:
        return False
    return subprocess.run(["unshare", "--mount", "sh", "-c", "mount -t tmpfs tmpfs /mnt"],
                          capture_output=True, timeout=60).returncode == 0


@pytest.mark.slow
@pytest.mark.requires_far_ends(FAR_ENDS)
@pytest.mark.skipif(not _can_mount_tmpfs(), reason="needs unshare, nsenter and tmpfs as root")
def test_watch_keeps_reaping_when_its_textfile_and_samples_cannot_be_written(
    lab: Lab, tmp_path: Path,
) -> None:
    """1. The watcher runs in a mount namespace of its own, its textfile and its samples
    file on a 1 MiB tmpfs; 2. the textfile's folder is removed, 3. the tmpfs is filled,
    4. then made read-only: in each, real leaks are still ended, round after round; 5.
    each distinct error is one stderr line, whatever the rounds; 6. once the folder is
    back and the disk has room, the file counts every failed write, by file."""
    disk = tmp_path / "disk"  # the tmpfs, seen from here through the watcher's root
    disk.mkdir()
    prom = disk / "metrics" / "mcp_tether.prom"
    mount = 'mount -t tmpfs -o size=1m tmpfs "$1" && mkdir "$1/metrics" && shift && exec "$@"'
    watcher = lab.popen(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, "sh", str(disk),
         sys.executable, "-m", "mcp_tether", "reap", "--watch", "--yes", "--interval", "0.2",
         "--min-age", "0", "--grace", "5", "--textfile", str(prom)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env={**os.environ, "XDG_STATE_HOME": str(disk / "state")})
    out, err = Lines(watcher.stdout), Lines(watcher.stderr)
    # The watcher's view of the folder: its own mount namespace, through its root.
    inside = Path(f"/proc/{watcher.pid}/root") / disk.relative_to("/")
    theirs = inside / prom.relative_to(disk)

    def file_text() -> str:
        try:
            return theirs.read_text()
        except OSError:
            return ""

    def errors(file: str) -> int:
        m = re.search(rf'^mcp_tether_file_write_errors_total{{file="{file}"}} (\d+)$',
                      file_text(), re.M)
        return int(m.group(1)) if m else -1

    def leak_and_see_it_ended() -> None:
        p = lab.pair([sys.executable, str(lab.fake_server(f"s{lab.n}/server.py",
                                                          sdk_import=True))])
        p.orphan()
        until(lambda: out.has("ended", f"pid {p.server.pid} "), "the watcher to end a leak",
              DEADLINE)

    leak_and_see_it_ended()
    until(lambda: errors("textfile") == 0 and errors("samples") == 0,
          "a first textfile with no failed write", DEADLINE)

    # 2. the folder removed: leaks still ended, two of them, rounds apart
    shutil.rmtree(inside / "metrics")
    for _ in range(2):
        leak_and_see_it_ended()
    (inside / "metrics").mkdir()
    removed = until(lambda: errors("textfile") >= 2 and errors("textfile"),
                    "the textfile back, counting the failed writes", DEADLINE)

    # 3. a full disk: the textfile and the samples file both fail
    with open(inside / "filler", "wb", buffering=0) as filler, \
            contextlib.suppress(OSError):  # ENOSPC: the disk is full
        while True:
            filler.write(b"\0" * 65536)
    for _ in range(2):
        leak_and_see_it_ended()
    (inside / "filler").unlink()
    until(lambda: errors("textfile") >= removed + 2 and errors("samples") >= 2,
          "the textfile back, counting the writes the full disk refused", DEADLINE)

    # 4. read-only: remounted from inside the watcher's mount namespace
    def remount(mode: str) -> None:
        # A remount read-only fails (EBUSY, status 32) while a file on it is open for
        # writing: the watcher may be in the middle of writing its textfile. Try again.
        def done() -> bool:
            return subprocess.run(["nsenter", "-t", str(watcher.pid), "-m", "mount", "-o",
                                   f"remount,{mode}", str(disk)], timeout=60,
                                  capture_output=True).returncode == 0
        until(done, f"the disk remounted {mode}", DEADLINE)

    remount("ro")
    leak_and_see_it_ended()
    remount("rw")
    full = errors("textfile")
    until(lambda: errors("textfile") > full, "the textfile back after the read-only disk",
          DEADLINE)

    watcher.send_signal(signal.SIGTERM)
    assert watcher.wait(DEADLINE) == 128 + signal.SIGTERM
    # Between its "scanning every" line and its "stopped by" line, only these:
    assert err.all()[-1] == "mcp-tether reap --watch: stopped by SIGTERM", err.lines
    said = [re.match(r"mcp-tether reap --watch: (--textfile|samples file) \S+ not written: "
                     r"([^;]+); reaping goes on", ln) for ln in err.lines[1:-1]]
    assert all(said), err.lines
    assert sorted(m.groups() for m in said if m) == [
        ("--textfile", "No space left on device"), ("--textfile", "No such file or directory"),
        ("--textfile", "Read-only file system"), ("samples file", "No space left on device"),
        ("samples file", "Read-only file system")], err.lines


@pytest.mark.requires_far_ends(FAR_ENDS)
def test_a_newline_in_a_command_line_or_a_package_name_keeps_each_record_on_one_line(
    lab: Lab, capsys: pytest.CaptureFixture[str],
) -> None:
    """1. A leaked `python -c` whose program holds a newline (not identified: left alone)
    and a leaked server whose package name holds one (identified: ended); 2. `ps`,
    `reap --dry-run` and 3. `reap --watch` print one line per record, the newline shown
    as `\\n`, never sent."""
    script = lab.fake_server("hostile/server.py", sdk_import=True)
    (script.parent / "pyproject.toml").write_text(
        '[project]\nname = "leaky\nwhile-true"\nversion = "1.0"\n')
    ended = lab.pair([sys.executable, str(script)])
    left = lab.pair([sys.executable, "-c", "import time\nprint('up', flush=True)\n"
                     "while True: time.sleep(1)"])  # the client waits for a first line
    for p in (ended, left):
        p.orphan()
    rc, out, _ = run_cli(capsys, "ps")
    assert rc == 0
    rows = {int(ln.split()[1]): ln for ln in out.splitlines()[1:-1] if ln.split()[1].isdigit()}
    assert "\\nwhile True" in rows[left.server.pid]
    assert "leaky\\nwhile-true" in rows[ended.server.pid]
    rc, out, _ = run_cli(capsys, "reap", "--dry-run")
    assert rc == 0
    assert any(ln.startswith(f"left alone: pid {left.server.pid} ") and "\\nwhile True" in ln
               for ln in out.splitlines())
    assert any(ln.startswith(f"would end pid {ended.server.pid} ") and "leaky\\nwhile" in ln
               for ln in out.splitlines())
    for text in (out, run_cli(capsys, "ps")[1]):
        assert not [ln for ln in text.splitlines() if ln.startswith("while")]
    watcher = lab.popen(
        [sys.executable, "-m", "mcp_tether", "reap", "--watch", "--yes", "--interval", "0.2",
         "--min-age", "0", "--grace", "5"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    lines = Lines(watcher.stdout)
    until(lambda: lines.has(f"left: pid {left.server.pid} ", "-c import time\\nprint("),
          "the line for the leak left alone", DEADLINE)
    until(lambda: lines.has(f"ended by sigterm: pid {ended.server.pid} leaky\\nwhile-true@1.0"),
          "the line for the leak ended", DEADLINE)
    watcher.send_signal(signal.SIGTERM)
    assert watcher.wait(DEADLINE) == 128 + signal.SIGTERM
    assert all(re.match(r"(ended|gone|denied|survived|left)\b", ln) for ln in lines.all()), \
        lines.lines
