"""mcp_tether.log: diagnostics on stderr, through `logging` once the helper is armed."""

from __future__ import annotations

import subprocess
import sys

SWAP = """
import io, sys
from mcp_tether import log
log.use_logging()
first, sys.stderr = sys.stderr, io.StringIO()
log.say("to the stderr of now")
got, sys.stderr = sys.stderr.getvalue(), first
print(repr(got))
"""


def test_lines_through_logging_go_to_the_stderr_of_the_moment_not_the_first_one() -> None:
    """A program that swaps sys.stderr after arming (pytest's capture does, per test)
    gets our lines on the stream it swapped in."""
    out = subprocess.run([sys.executable, "-c", SWAP], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == repr("to the stderr of now\n"), out
    assert out.stderr == ""
