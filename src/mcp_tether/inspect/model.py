"""`inspect`'s finding: what one installed MCP SDK's stdio server transport does.

Guarantees:
- One `Transport` per SDK found, read from its installed source (`node.py`,
  `python.py`) or, for a server, from what its entry point loads (`uses.py`, which
  also sets `state`, `how` and `label`).
- `to_dict()` is the JSON schema of `inspect --json`, and the only place a finding
  becomes a dict: `language` when known, `remedy` for a Node SDK package (a
  `NodeTransport`), `state`/`how`/`label`/`tether` when the finding answers "what does
  this server load".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Transport", "NodeTransport"]

# The fields of the answer to "what does this server load" (`uses.Uses.as_inspect`).
ANSWER = ("state", "how", "label", "tether")


@dataclass
class Transport:
    """What an SDK's stdio server transport listens for and whether EOF ends it."""

    language: str | None = None  # "node" / "python"; None for a transport in a bundle
    package: str | None = None
    version: str | None = None
    path: str | None = None  # the package's folder (or the bundle file)
    transport_file: str | None = None  # the file defining the transport, when found
    delegates_to: str | None = None  # the package whose transport it uses ("mcp@1.26.0")
    stdin_events: list[str] = field(default_factory=list)
    stdout_events: list[str] = field(default_factory=list)
    signals: list[str] = field(default_factory=list)
    parent_watch: bool = False
    calls_process_exit: bool = False
    exits_on_eof: bool | None = None  # None: cannot be read
    notes: list[str] = field(default_factory=list)
    # The answer to "which SDK does this server load" (`uses.Uses.as_inspect`):
    state: str | None = None  # "sdk" / "none" / "unknown"
    how: str | None = None
    label: str | None = None
    # How the server loads the Node package mcp-tether ("server.mjs imports
    # 'mcp-tether'"), None when its code does not: then a fix is not "add the line".
    tether: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        if self.language is None:
            del out["language"]
        if self.state is None:
            for key in ANSWER:
                del out[key]
        return out


@dataclass
class NodeTransport(Transport):
    """A Node SDK package's transport, with the one-line fix when it does not exit."""

    remedy: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        # `remedy` sits before the answer's fields, as it always has in the JSON.
        answer: dict[str, Any] = {k: out.pop(k) for k in ANSWER if k in out}
        out.update(answer)
        return out
