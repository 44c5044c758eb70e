"""Keep the server honest in CI: the `mcp_lifecycle` fixture comes with mcp-tether."""

import sys
from pathlib import Path

SERVER = Path(__file__).with_name("server.py")


def test_server_dies_with_its_client(mcp_lifecycle):
    report = mcp_lifecycle([sys.executable, str(SERVER)])
    report.assert_passes()  # names each failed scenario, its verdict and what survived
