"""mini.py with a non-daemon thread named `flusher` at the OS level (prctl PR_SET_NAME),
as Python >= 3.14 names every thread and some libraries do by hand: it survives EOF."""

import ctypes
import os
import runpy
import sys
import threading
import time

PR_SET_NAME = 15  # names the calling thread (shown in /proc/<pid>/task/<tid>/comm)


def flusher() -> None:
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_NAME, b"flusher", 0, 0, 0)
    while True:
        time.sleep(0.1)


threading.Thread(target=flusher, name="flusher", daemon=False).start()
sys.argv = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "mini.py")]
runpy.run_path(sys.argv[0], run_name="__main__")
