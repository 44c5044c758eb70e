"""The survey's list file: one server a line.

    # comment
    SPEC [launch=npx|uvx|direct] [bin=NAME] [env=KEY=VALUE]... [call=TOOL:JSON]
         [needs=SERVICE] [name=LABEL] [timeout=SECONDS] [downloads=N] [rank=N]
         [-- SERVER ARGS...]

    npm:@modelcontextprotocol/server-memory@2026.8.31
    npm:@modelcontextprotocol/server-filesystem@2026.8.31 -- /tmp
    pypi:mcp-server-time==2026.10.19 launch=direct -- --local-timezone UTC
    npm:@modelcontextprotocol/server-github@2025.4.8 env=GITHUB_PERSONAL_ACCESS_TOKEN=dummy
    npm:some-db-server@1.0.0 needs=postgres -- postgresql://127.0.0.1:9/none

Words are split like a shell's (quote JSON: `'call=echo:{"message": "hi"}'`). SPEC is
any `packages` spec. `needs=` says the server wants a service that is not there, so a
failure to start is reported as "needs SERVICE", not as a lifecycle failure.
`downloads=` (npm: downloads a month) and `rank=` (PyPI: rank among the most downloaded)
say how much the server is used, as `survey.select` read them; the table shows them.
Guarantees: every malformed line is a `ConfigError` naming the file and line.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_tether.cliutil import parse_duration
from mcp_tether.errors import ConfigError, TetherError
from mcp_tether.packages import LAUNCHES, PackageSpec, parse_spec

__all__ = ["Entry", "parse_list", "parse_line", "KEYS"]

KEYS = ("launch", "bin", "env", "call", "needs", "name", "timeout", "downloads", "rank")


@dataclass
class Entry:
    spec: PackageSpec
    launch: str | None = None
    bin: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    call: tuple[str, dict[str, Any]] | None = None
    needs: str | None = None
    name: str | None = None
    timeout: float | None = None
    downloads: int | None = None  # npm: downloads a month
    rank: int | None = None  # PyPI: rank among the most downloaded (1 = the most)
    args: list[str] = field(default_factory=list)
    line: int = 0

    @property
    def label(self) -> str:
        return self.name or self.spec.text

    def to_dict(self) -> dict[str, Any]:
        return {"spec": self.spec.text, "launch": self.launch, "bin": self.bin,
                "env": self.env, "call": list(self.call) if self.call else None,
                "needs": self.needs, "name": self.name, "timeout": self.timeout,
                "downloads": self.downloads, "rank": self.rank, "args": self.args,
                "line": self.line}


def parse_line(text: str, line: int = 0) -> Entry | None:
    """One line -> Entry (None for blank and comment lines); ValueError with the reason."""
    words = shlex.split(text, comments=True)
    if not words:
        return None
    try:
        spec = parse_spec(words[0])
    except TetherError as exc:
        raise ValueError(exc.msg) from None
    entry = Entry(spec, line=line)
    rest = words[1:]
    cut = rest.index("--") if "--" in rest else len(rest)
    entry.args = rest[cut + 1:]
    for word in rest[:cut]:
        key, eq, value = word.partition("=")
        if not eq or key not in KEYS:
            raise ValueError(f"{word!r}: expected KEY=VALUE with KEY one of {', '.join(KEYS)} "
                             "(server arguments go after `--`)")
        if key == "env":
            k, eq2, v = value.partition("=")
            if not eq2 or not k:
                raise ValueError(f"env={value!r}: expected env=KEY=VALUE")
            entry.env[k] = v
        elif key == "call":
            tool, colon, raw = value.partition(":")
            try:
                arguments = json.loads(raw) if colon else {}
            except ValueError as exc:
                raise ValueError(f"call={value!r}: the arguments are not JSON: {exc}") from None
            if not tool or not isinstance(arguments, dict):
                raise ValueError(f"call={value!r}: expected call=TOOL:{{JSON object}}")
            entry.call = (tool, arguments)
        elif key == "launch":
            if value not in LAUNCHES:
                raise ValueError(f"launch={value!r}: choose from {', '.join(LAUNCHES)}")
            entry.launch = value
        elif key == "timeout":
            entry.timeout = parse_duration(value)
        elif key in ("downloads", "rank"):
            if not value.isdigit():
                raise ValueError(f"{key}={value!r}: expected a whole number")
            setattr(entry, key, int(value))
        else:
            setattr(entry, key, value)
    return entry


def parse_list(path: str | Path) -> list[Entry]:
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(str(path), exc.strerror or str(exc)) from None
    out = []
    for n, raw in enumerate(text.splitlines(), 1):
        try:
            entry = parse_line(raw, n)
        except ValueError as exc:
            raise ConfigError(str(path), str(exc), line=n) from None
        if entry is not None:
            out.append(entry)
    if not out:
        raise ConfigError(str(path), "no server listed")
    return out
