"""The tree walk (`proc.tree.own_tree`) sees what a full process-table scan sees of a tree."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from mcp_tether.proc import ProcessId, descendants, snapshot
from mcp_tether.proc.tree import own_tree
from polling import until

pytestmark = pytest.mark.linux

# A child whose grandchild is started by a second thread: the kernel lists it under
# that thread's /proc/<pid>/task/<tid>/children, not the main thread's.
CHILD = """
import queue, subprocess, sys, threading
box, done = queue.Queue(), threading.Event()
def spawn():
    box.put(subprocess.Popen(["sleep", "60"]))
    done.wait()  # the thread stays: the grandchild stays on its list
threading.Thread(target=spawn).start()
p = box.get()
print(p.pid, flush=True)
sys.stdin.read()
p.kill(); p.wait(); done.set()
"""


def test_the_tree_walk_finds_a_grandchild_forked_by_a_thread_as_the_full_scan_does() -> None:
    if own_tree(os.getpid()) is None:
        pytest.skip("this kernel lists no /proc/<pid>/task/<tid>/children")
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        grandchild = int(child.stdout.readline())
        want = {child.pid, grandchild}

        def walked_both() -> set[ProcessId]:  # the grandchild may still be exec'ing
            walked = {i.ident for i in own_tree(os.getpid()) or []}
            return walked if want <= {i.pid for i in walked} else set()

        walked = until(walked_both, f"the tree walk to list the child {child.pid} and the "
                       f"grandchild {grandchild}", 10)
        full = {i.ident for i in descendants(os.getpid(), snapshot())}
        assert {i for i in walked if i.pid in want} == {i for i in full if i.pid in want}
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(10)
