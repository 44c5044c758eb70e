"""A program a test needs: found on PATH, a skip where it is missing, a failure under CI.

CI (`.ci/run`, CI=true) installs every such program, so there a missing one is a broken
set-up, never a quiet skip.
"""

from __future__ import annotations

import os
import shutil

import pytest


def needed(tool: str) -> str:
    """The path of `tool`, or skip the test (fail it under CI=true)."""
    found = shutil.which(tool)
    if found is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{tool} is missing (CI installs it: .ci/run)")
        pytest.skip(f"{tool} is not installed")
    return found
