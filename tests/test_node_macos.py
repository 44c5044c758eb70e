"""The Node package on macOS, proven on Linux: its `ps` reader against a ps that prints as
macOS's does, and its own tree tests on that path.

On macOS the package reads processes with `/bin/ps` (node/lib/platform/ps.cjs: parents,
groups, terminals, `lstart`, and `ps -E` for the tree's mark), chosen by
node/lib/platform/platform.cjs.
Here the package's test switch (MCP_TETHER_TEST_PLATFORM=darwin) takes that path and
MCP_TETHER_TEST_PS runs tests/macos_ps.py in ps's place: Apple's output (adv_cmds
ps/keyword.c and print.c), answered from /proc, so the macOS code runs against real
processes. The Python guard behind the transport runs on the darwin backend's simulation
(MCP_TETHER_BACKEND=darwin-sim) in the same run: the whole stack takes its macOS path.
None of this ran on a Mac.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import node_tap
import node_tether_env
from mcp_tether.lab import node_env

pytestmark = [
    pytest.mark.skipif(node_env.missing_tools() is not None, reason="needs node and npm"),
    pytest.mark.linux,
]
REPO = Path(__file__).resolve().parents[1]
FAKE_PS = REPO / "tests" / "macos_ps.py"
SIM = {"MCP_TETHER_TEST_PLATFORM": "darwin", "MCP_TETHER_TEST_PS": str(FAKE_PS),
       "MCP_TETHER_BACKEND": "darwin-sim"}


def _ps(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(FAKE_PS), *args], capture_output=True, text=True, timeout=30,
                          stdin=subprocess.DEVNULL, env={**os.environ, **(env or {})})


def test_the_fake_ps_prints_as_macos_ps_does() -> None:
    """Apple's formats: %5d numbers, "??" for no terminal, lstart as strftime's %c in the
    zone TZ names, argv then the environment with -E, "ps" as its own ucomm, a header
    only when a keyword has one, and -p of no process: nothing and status 1."""
    me = os.getpid()
    got = _ps("-ww", "-o", "pid=", "-o", "ppid=", "-o", "tt=", "-o", "lstart=", "-o",
              "command=", "-p", str(me), env={"TZ": "UTC", "LC_ALL": "C"})
    assert got.returncode == 0 and got.stdout.count("\n") == 1, got
    line = got.stdout.rstrip("\n")
    assert line[:5] == f"{me:>5}" and line[6:11] == f"{os.getppid():>5}"
    assert line[12:17] == "  ?? " or line[12:16].strip(), line  # no terminal here: "??"
    with open(f"/proc/{me}/stat") as fh:
        ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/stat") as fh:
        btime = next(int(ln.split()[1]) for ln in fh if ln.startswith("btime "))
    start = time.strftime("%c", time.gmtime(btime + ticks // os.sysconf("SC_CLK_TCK")))
    assert line[18:46] == f"{start:<28}", line
    with open(f"/proc/{me}/cmdline", "rb") as fh:
        argv = fh.read().decode().split("\0")[:-1]
    assert line[47:] == " ".join(argv), line
    with_env = _ps("-ww", "-E", "-o", "command=", "-p", str(me)).stdout.rstrip("\n")
    assert with_env.startswith(" ".join(argv) + " ") and " PATH=" in with_env, with_env[:300]
    own = _ps("-A", "-o", "pid=", "-o", "ppid=", "-o", "ucomm=").stdout.splitlines()
    assert any(ln.split()[1:] == [str(me), "ps"] for ln in own), own[-5:]
    header = _ps("-o", "pid", "-o", "command", "-p", str(me)).stdout.splitlines()
    assert header[0] == "  PID COMMAND", header
    gone = _ps("-o", "pid=", "-p", "4194305")
    assert gone.returncode == 1 and gone.stdout == ""


def test_the_ps_reader_agrees_with_the_proc_reader_on_live_processes(tmp_path: Path) -> None:
    """node/lib/platform/ps.cjs through the fake ps and node/lib/platform/procfs.cjs on the
    same processes: the same parent, group and terminal; the start the same instant to the
    second; the mark read back from `ps -E`; a gone pid null; the table without the ps
    itself."""
    code = """
const ps = require(process.argv[2] + '/lib/platform/ps.cjs');
const procfs = require(process.argv[2] + '/lib/platform/procfs.cjs');
const me = process.pid;
const a = ps.stat(me), b = procfs.stat(me);
const hz = 100, btime = Number(require('fs').readFileSync('/proc/stat', 'latin1')
  .split('\\n').find((l) => l.startsWith('btime ')).split(' ')[1]);
const env = ps.environ(me);
console.log(JSON.stringify({ a, b, epoch: btime + Math.floor(Number(b.start) / hz),
  mark: ps.envValue(env, 'MCP_TETHER_TREE'), gone: ps.stat(4194305),
  selfInTable: ps.table().some((r) => r.ppid === me),
  argv: ps.readProcess(me).argv.slice(0, 2) }));
"""
    script = tmp_path / "agree.cjs"
    script.write_text(code)
    out = subprocess.run(["node", str(script), str(REPO / "node")], capture_output=True,
                         text=True, timeout=60, stdin=subprocess.DEVNULL,
                         env={**os.environ, **SIM, "MCP_TETHER_TREE": "12:34,56:78"})
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    a, b = got["a"], got["b"]
    assert (a["pid"], a["ppid"], a["pgid"], a["tty"]) == (b["pid"], b["ppid"], b["pgid"], b["tty"])
    assert a["sid"] is None  # macOS's ps shows no session id
    assert int(a["start"]) == got["epoch"]
    assert got["mark"] == "12:34,56:78"
    assert got["gone"] is None and got["selfInTable"] is False
    assert got["argv"] == ["node", str(script)]


@pytest.mark.slow
def test_the_node_packages_tree_tests_pass_on_the_macos_path() -> None:
    """`node --test` of tether(), the preload, mcp-tether/client behind each supervisor and
    what a tree kill leaves, with the package on its macOS path and the guard on the
    darwin backend's simulation: setsid helpers, daemonized grandchildren (found by the
    mark `ps -E` reads), close() racing start(), the opt-out; a terminal multiplexer or a
    used daemon ends under the Node supervisors there (ps shows no descriptors), and is
    still left behind the guard (libproc shows them)."""
    fx = node_tether_env.ensure()
    bindir = str(Path(sys.executable).parent)
    env = {k: v for k, v in os.environ.items() if k != "TMUX"}
    env.update(SIM, PATH=bindir + os.pathsep + env.get("PATH", ""),
               MCP_TETHER_NODE_FIXTURES=str(fx), MCP_TETHER_RACE_ROUNDS="12",
               MCP_TETHER_RACE_AT_ONCE="2")
    files = ["test/tether.test.mjs", "test/tether-late.test.mjs", "test/register.test.mjs",
             "test/client.test.mjs", "test/client-race.test.mjs", "test/client-hosts.test.mjs"]
    if all(shutil.which(t) for t in ("tmux", "script", "setsid", "ss")):
        files.append("test/leave.test.mjs")
    out = subprocess.run(["node", "--test", "--test-timeout=300000", *files],
                         cwd=REPO / "node", capture_output=True, text=True, timeout=900,
                         stdin=subprocess.DEVNULL, env=env)
    assert out.returncode == 0, node_tap.report(out)
    assert "# fail 0" in out.stdout, out.stdout[-2000:]
