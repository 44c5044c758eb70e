"""Keep the server honest in CI: the `mcp_lifecycle` fixture comes with mcp-tether."""

import sys
from pathlib import Path

SERVER = Path(__file__).with_name("server.py")


def test_server_dies_with_its_client(mcp_lifecycle):
    # ready_timeout: a loaded CI runner can take a while to import the SDK
    report = mcp_lifecycle([sys.executable, str(SERVER)], ready_timeout=60)
    report.assert_passes()  # names each failed scenario, its verdict and what survived
