"""Waiting for a state another process reaches: poll it, with a deadline.

The tests' one way to wait for something they cannot be told about (a pid file written,
a process adopted, a container gone): never a fixed sleep, which is flaky when the machine
is slow and wasted when it is fast, and never a wait without an end, which turns a bug
into a hung suite. Each caller states its own deadline: a generous ceiling, not a timing
target.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

FIRST_STEP = 0.002  # seconds: most states arrive within milliseconds
MAX_STEP = 0.05  # the most a state can be seen late, once the back-off has grown


def until(pred: Callable[[], T], what: str, timeout: float, *, max_step: float = MAX_STEP) -> T:
    """pred()'s first truthy value, tried every few milliseconds (the step doubling up to
    `max_step`) until `timeout` seconds have passed; then tried once more, and an
    AssertionError says what never happened ("timed out waiting for <what>")."""
    deadline = time.monotonic() + timeout
    step = FIRST_STEP
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(step)  # polling for a state with a deadline, not waiting a fixed time
        step = min(step * 2, max_step)
