"""The core's keeper loop (`proc.keeper.BaseKeeper`), which the probe's and the host check's
keepers extend: it reads what it watches, reaps (keeping each child's status), stops on a
signal or its driver's death, never returns before the tree is ended, and hands an event
to the handler its name says."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from mcp_tether.proc.keeper import BaseKeeper

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux primitives"),
    pytest.mark.requires_linux_backend("a child subreaper: the orphaned grandchild is ours"),
]

# A keeper in a fresh process (it becomes a subreaper and installs signal handlers).
# Its child prints one JSON line and a line that is not JSON to stdout, starts a
# grandchild that sleeps, and exits: the grandchild is orphaned. The output fd's last
# words are written by the keeper itself as `keep` returns, so only the end reads them.
DEMO = """
import json, os, signal, sys, time
from mcp_tether.proc.keeper import BaseKeeper
from mcp_tether.proc.reap import has_children
from mcp_tether.proc.spawn import spawn

CHILD = '''
import json, subprocess, sys
g = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(json.dumps({"grandchild": g.pid}), flush=True)
print("not json", flush=True)
'''

class Demo(BaseKeeper):
    def __init__(self, how):
        super().__init__()
        self.how, self.msgs, self.err = how, [], b""

    def start(self):
        super().start()
        out_r, out_w = os.pipe()
        err_r, self.err_w = os.pipe()
        self.parent_r, self.parent_w = os.pipe()
        for fd in (out_r, err_r, self.parent_r):
            os.set_blocking(fd, False)
        self.child = spawn([sys.executable, "-c", CHILD], stdout=out_w)
        os.close(out_w)
        self.watch(out_r, self.msgs.append, lines=True)
        self.watch(err_r, self.on_err, output=True)
        self.watch_parent(self.parent_r, "parent died")

    def on_err(self, chunk):
        self.err += chunk

    def keep(self):
        got = self.wait_until(lambda: self.msgs and self.child.pid in self.statuses,
                              time.monotonic() + 20)
        if self.how == "signal":
            signal.raise_signal(signal.SIGTERM)
        elif self.how == "parent":
            os.close(self.parent_w)
        if self.how != "done":
            self.wait_until(lambda: False, time.monotonic() + 20)
        os.write(self.err_w, b"last words")
        os.close(self.err_w)
        return "kept" if got else "timeout"

    def interrupted(self):
        return "stopped: " + self.stop_why

    def result(self, outcome):
        g = self.msgs[0]["grandchild"]
        return {"outcome": outcome, "msgs": self.msgs, "child": self.statuses[self.child.pid],
                "grandchild": self.statuses.get(g), "err": self.err.decode(),
                "left": has_children(), "ended": self.cleanup_at < float("inf")}

print(json.dumps(Demo(sys.argv[1]).run()))
"""


def _run(how: str) -> dict[str, object]:
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(DEMO), how], capture_output=True,
                       text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def test_the_keeper_reads_reaps_and_ends_the_orphaned_rest_of_its_tree() -> None:
    """1. JSON lines reach the subclass, a line that is not JSON is skipped; 2. the child's
    exit is reaped with its status; 3. the orphaned grandchild is SIGKILLed (137) and
    reaped by the end, no child is left; 4. the output fd is read once more after the end."""
    out = _run("done")
    assert out["outcome"] == "kept"
    assert len(out["msgs"]) == 1 and "grandchild" in out["msgs"][0]  # type: ignore[arg-type,index]
    assert out["child"] == 0 and out["grandchild"] == 137
    assert out["left"] is False and out["ended"] is True
    assert out["err"] == "last words"


@pytest.mark.parametrize(("how", "why"), [("signal", "interrupted"), ("parent", "parent died")])
def test_a_signal_or_the_drivers_death_stops_the_loop_and_the_tree_still_ends(
    how: str, why: str
) -> None:
    """1. SIGTERM (or EOF on the driver's pipe) while keeping; 2. the outcome is
    interrupted()'s, with the reason; 3. the tree is ended all the same."""
    out = _run(how)
    assert out["outcome"] == f"stopped: {why}"
    assert out["grandchild"] == 137 and out["left"] is False


def test_an_event_goes_to_the_handler_its_name_says_and_no_other() -> None:
    """1. `spawn-error` reaches `handle_spawn_error` with its arguments; 2. a name without a
    handler, a name with an underscore (not how events are named) and a name that is not a
    string reach nothing."""

    class Events(BaseKeeper):
        def __init__(self) -> None:
            super().__init__()
            self.got: list[tuple[object, ...]] = []

        def handle_spawn_error(self, *args: object) -> None:
            self.got.append(args)

    k = Events()
    k.dispatch("spawn-error", {"reason": "x"}, 7)
    assert k.got == [({"reason": "x"}, 7)]
    for name in ("spawned", "spawn_error", None, 5, ["spawn-error"]):
        k.dispatch(name, {})
    assert k.got == [({"reason": "x"}, 7)]
