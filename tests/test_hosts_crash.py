"""A `wrap` SIGKILLed at any moment leaves the config whole, no truncated backup, no debris."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from hosts_helpers import TETHER
from mcp_tether import hosts
from mcp_tether.hosts import atomic
from polling import until

pytestmark = [pytest.mark.linux, pytest.mark.slow]
KILLS = 16
SEED = 1501


def config_text() -> str:
    servers = {f"s{i}": {"command": "sh", "args": ["-c", f"exec srv-{i} --flag"],
                         "env": {"TOKEN": "x" * 40}} for i in range(24)}
    return json.dumps({"mcpServers": servers}, indent=2) + "\n"


def debris(folder: Path) -> list[str]:
    return [n for n in os.listdir(folder) if atomic.TEMP_MARK in n] if folder.exists() else []


def mid_write_or_ended(proc: subprocess.Popen[bytes], *folders: Path) -> bool:
    return any(debris(f) for f in folders) or proc.poll() is not None


def swept(*folders: Path) -> bool:
    return not any(debris(f) for f in folders)


def test_a_wrap_killed_at_random_moments_leaves_no_debris_and_no_half_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1. a real `mcp-tether wrap` with slowed writes, SIGKILLed after a random delay
    (from its start, or from the moment its first temp file exists);
    2. poll until its janitor is done; 3. the config is the original or the fully
    wrapped file, every backup is the whole original, and no temp file is left."""
    state = tmp_path / "state"
    reference = tmp_path / "ref" / "mcp.json"
    reference.parent.mkdir()
    reference.write_text(config_text())
    original = reference.read_bytes()
    monkeypatch.setenv("MCP_TETHER_STATE_DIR", str(tmp_path / "ref-state"))
    hosts.wrap(reference, None, TETHER, force=True)
    wrapped = reference.read_bytes()
    monkeypatch.setenv("MCP_TETHER_STATE_DIR", str(state))
    env = {**os.environ, "MCP_TETHER_STATE_DIR": str(state),
           atomic.SLOW_ENV: "0.0005"}
    rng = random.Random(SEED)
    outcomes = {"original": 0, "wrapped": 0}
    for i in range(KILLS):
        folder = tmp_path / f"run{i}"
        folder.mkdir()
        cfg = folder / "mcp.json"
        cfg.write_bytes(original)
        proc = subprocess.Popen(
            [sys.executable, "-m", "mcp_tether", "wrap", "--config", str(cfg), "--force",
             "--tether", TETHER],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        backups = atomic.backup_dir(cfg.resolve())
        if i % 2:  # odd runs: from the moment the first temp file exists (mid-write)
            until(partial(mid_write_or_ended, proc, folder, backups),
                  f"run {i}'s first temp file, or its end", 30.0, max_step=0.002)
        delay = rng.uniform(0.0, 1.5) if i % 2 else rng.uniform(0.05, 0.9)
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.kill()  # our own child, still unreaped: the pid is still its own
            proc.wait()
        try:
            until(partial(swept, folder, backups), "the janitor's sweep", 5.0)
        except AssertionError as e:
            raise AssertionError(f"{e} (run {i}, delay {delay:.3f} s); left: "
                                 f"{debris(folder) + debris(backups)}") from None
        assert sorted(os.listdir(folder)) == ["mcp.json"], (i, delay)
        now = cfg.read_bytes()
        assert now in (original, wrapped), (i, delay)
        outcomes["original" if now == original else "wrapped"] += 1
        for backup in atomic.backups_of(cfg.resolve()):
            assert backup.read_bytes() == original, (i, delay, backup)
        if backups.exists():
            assert set(os.listdir(backups)) <= {"mcp.json.bak"}, (i, delay)
        # The next, uninterrupted run finishes the job and keeps a single backup.
        assert subprocess.run(
            [sys.executable, "-m", "mcp_tether", "wrap", "--config", str(cfg), "--force",
             "--tether", TETHER], env={**env, atomic.SLOW_ENV: ""},
            capture_output=True).returncode == 0
        assert cfg.read_bytes() == wrapped
        assert [b.name for b in atomic.backups_of(cfg.resolve())] == ["mcp.json.bak"]
    print(f"kills: {KILLS}, outcomes {outcomes}")  # both kinds should occur
