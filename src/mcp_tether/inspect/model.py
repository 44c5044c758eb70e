"""`inspect`'s finding: what one installed MCP SDK's stdio server transport does.

Guarantees:
- One `Transport` per SDK found, read from its installed source (`node.py`,
  `python.py`) or, for a server, from what its entry point loads (`uses.py`, which
  also sets `state`, `how` and `label`).
- `Uses` is the one answer to "which SDK does this server load" (`uses.py`), whichever
  language's reading (`node_imports.py`, `python_imports.py`) found it.
- `to_dict()` is the JSON schema of `inspect --json`, and the only place a finding
  becomes a dict: `language` when known, `remedy` for a Node SDK package (a
  `NodeTransport`), `state`/`how`/`label`/`tether` when the finding answers "what does
  this server load".
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

__all__ = ["Transport", "NodeTransport", "Uses"]

# The fields of the answer to "what does this server load" (`Uses.as_inspect`).
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
    # The answer to "which SDK does this server load" (`Uses.as_inspect`):
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


@dataclass
class Uses:
    """The SDK a server loads. `state`: "sdk" (found), "none" (its code imports none),
    "unknown" (could not be told; `how` says why)."""

    state: str = "unknown"
    language: str | None = None
    package: str | None = None  # the SDK package, or the bundling package for a bundle
    version: str | None = None
    via: str | None = None  # what it goes through: "mcp 1.26.0" for fastmcp
    bundled: bool = False
    path: str | None = None  # the SDK's folder, or the bundle file
    how: str = ""
    info: Transport | None = None  # `inspect`'s reading of its stdio transport
    tether: str | None = None  # how it loads the Node package mcp-tether, if it does

    @property
    def found(self) -> bool:
        return self.state == "sdk"

    def label(self) -> str:
        if self.state == "unknown" and self.package:  # an SDK that inspect cannot read
            return (f"{self.package} {self.version or '(version unknown)'} "
                    "(an MCP SDK not known to inspect: EOF behaviour unknown)")
        if self.state != "sdk":
            return self.state
        text = f"{self.package} {self.version or '(version unknown)'}"
        if self.bundled:
            text = f"an MCP SDK bundled into {self.package} {self.version or ''}".rstrip()
        return text + (f" via {self.via}" if self.via else "")

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "language": self.language, "package": self.package,
                "version": self.version, "via": self.via, "bundled": self.bundled,
                "path": self.path, "how": self.how, "label": self.label(),
                "tether": self.tether,
                "transport": None if self.info is None else self.info.to_dict()}

    @property
    def sdk_name(self) -> str | None:
        """The SDK's package name as `ps` shows it (a bundle: the package it came from)."""
        if self.state != "sdk":
            return None
        return (self.via or "MCP SDK (bundled)") if self.bundled else self.package

    @property
    def sdk_version(self) -> str | None:
        return None if self.bundled or self.state != "sdk" else self.version

    def as_inspect(self) -> list[Transport]:
        """One `inspect` finding for what the server loads (what `probe`'s diagnosis
        reads), with `state`, `label` and `how`; a "none"/"unknown" answer is a finding
        without a package, so the diagnosis can say so."""
        base = self.info if self.state == "sdk" and self.info is not None else \
            Transport(package=self.package, version=self.version, path=self.path)
        return [replace(base, language=self.language, state=self.state, how=self.how,
                        label=self.label(), tether=self.tether)]
