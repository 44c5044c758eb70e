"""What the host-config tests (`wrap`, `unwrap`, `hosts`) share.

- `TETHER`: the `mcp-tether` that wrap writes into configs: a real file, since wrap
  checks that the command it puts in front of a server exists.
- `state_dir` (autouse where a test file binds it): backups go to a state folder under
  tmp_path, never the real one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TETHER = str(Path(__file__).parent / "fixtures" / "bin" / "mcp-tether")


@pytest.fixture(autouse=True)
def state_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Backups go to a state folder under tmp_path, never the real one."""
    folder = tmp_path / "state"
    monkeypatch.setenv("MCP_TETHER_STATE_DIR", str(folder))
    return folder
