"""What a host check scenario's keeper is told (`CheckSpec`), and the recorder's command line.

The driver (`hostcheck/__init__.py`) builds one `CheckSpec` per scenario and hands it to
the keeper as JSON (`spec_json`); the keeper starts the host with the recorder's command
(`recorder_argv`) where the host's command line says `{server}` (PLACEHOLDER), or in
the host's config. A process is a recorder only if it runs the recorder script itself
(`is_recorder`): a wrapper or a guard with the script among its arguments is not one.

Guarantees:
- Data and pure functions: nothing here starts, reads or signals a process.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

__all__ = ["CheckSpec", "HOLDS", "PLACEHOLDER", "RECORDER", "recorder_argv", "is_recorder",
           "role_of", "spec_json"]

RECORDER = str(Path(__file__).resolve().parent / "recorder.py")
PLACEHOLDER = "{server}"
HOLDS = ("tools/list", "initialize", "none")


@dataclass
class CheckSpec:
    """One scenario of the host check as its keeper is told it (JSON from the driver)."""

    argv: list[str]  # the host's command line; PLACEHOLDER args become the recorder's
    scenario: str
    work: str  # this scenario's folder: events, throwaway HOME and project, host log
    host: str | None = None  # --host NAME: the recorder goes into this host's config
    pty: bool = False
    quit: str | None = None  # written to the host's stdin before EOF (the exit scenario)
    env: dict[str, str] | None = None
    cwd: str | None = None
    ready_timeout: float = 30.0
    host_timeout: float = 15.0
    settle: float = 1.0
    eof: str = "stay"  # the recorder at stdin EOF: stay (needs the whole ladder) or exit
    grandchild: bool = True
    hold: str = "tools/list"  # where the recorder holds the host until the trigger (HOLDS)
    hold_wait: float = 5.0  # after `initialized`, how long a tools/list hold waits for one
    wrapper: bool = False  # a wrapper that forwards no signal stands before the recorder
    signals: str = "die"  # the recorder at a fatal signal: die (as servers do) or stay
    scope: str | None = None  # --host-scope: the host's config file of this scope
    after_edit: list[str] = field(default_factory=list)  # reconnect, pty: keys.parse steps
    # the tool-calling scenarios (`calls.py`): the host's model API, the variables set to
    # the stand-in's URL, the idle gap they pause for, what a pty host shows when it
    # takes a prompt
    model_api: str | None = None
    model_env: list[str] = field(default_factory=list)
    min_age: float = 30.0
    prompt_wait: str | None = None


def spec_json(spec: CheckSpec) -> str:
    return json.dumps(asdict(spec))


def recorder_argv(events: str, eof: str = "stay", grandchild: bool = True, *,
                  hold: str = "none", signals: str = "die", wrapper: bool = False) -> list[str]:
    argv = [sys.executable, RECORDER, "--events", events]
    if wrapper:
        argv += ["--role", "wrapper"]
    if eof != "stay":
        argv += ["--eof", eof]
    if signals != "die":
        argv += ["--signals", signals]
    if hold != "none":
        argv += ["--hold", hold]
    if not grandchild:
        argv.append("--no-grandchild")
    return argv


def is_recorder(argv: list[str]) -> bool:
    """A recorder process runs `python RECORDER ...`; a wrapper or guard that merely has
    the recorder's path among its arguments is not one."""
    return len(argv) > 1 and argv[1] == RECORDER


def role_of(argv: list[str]) -> str:
    """A recorder's role from its command line (`--role R`, else the server)."""
    for flag, value in zip(argv, argv[1:], strict=False):
        if flag == "--role":
            return value
    return "server"
