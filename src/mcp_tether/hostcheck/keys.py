"""Keystrokes typed into a pty host after the reconnect's edit, each when the screen is ready.

    steps = parse(["wait=Manage MCP servers", "keys=<Enter>"])   # from --after-edit
    shown(screen_bytes, steps[0].text)                             # the wait is over?

A host that reloads an edited server only on a command (Claude Code: `/mcp`, the
server, Reconnect) is driven by steps given on the command line, in order:

- `wait=TEXT`: wait until TEXT is on the host's terminal output since the last keys
  typed (since the start for the first); escape sequences are removed and runs of
  white space count as one space on both sides, so text a TUI draws in pieces matches;
- `keys=TEXT`: type TEXT; `<Name>` is a key: Enter, Esc, Tab, Space, Up, Down, Left,
  Right, Backspace, C-c, and `<lt>` a literal `<`.

Guarantees:
- `parse` refuses what it cannot type (an unknown `<Name>`, a step without `wait=` or
  `keys=`, an empty wait) with one line (`UsageError`), before anything starts.
- Pure functions of their input: nothing here reads a terminal or starts anything.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mcp_tether.errors import UsageError

__all__ = ["KeyStep", "KEYS", "parse", "screen_text", "shown"]

# What a terminal sends for each key (xterm's normal cursor mode; Enter is CR, as typed).
KEYS = {
    "Enter": "\r", "Esc": "\x1b", "Tab": "\t", "Space": " ", "Backspace": "\x7f",
    "Up": "\x1b[A", "Down": "\x1b[B", "Right": "\x1b[C", "Left": "\x1b[D",
    "C-c": "\x03", "lt": "<",
}
_NAME = re.compile(r"<([^<>]*)>")
# CSI (colours, cursor moves, private modes), OSC (titles) up to BEL or ST, charset
# selection and the short ESC forms.
_ESCAPE = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"
                     rb"|\x1b[()][0-9A-Za-z]|\x1b[=>78DEHMc]")
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class KeyStep:
    """One --after-edit step: keys to type, or text to wait for (not a `ladder.Step`)."""

    kind: str  # "wait" or "keys"
    text: str  # wait: the text, white space normalized; keys: the characters to type


def _keys(text: str, spec: str) -> str:
    def one(m: re.Match[str]) -> str:
        name = m.group(1)
        if name not in KEYS:
            raise UsageError(f"--after-edit {spec!r}: unknown key <{name}> (one of: "
                             + ", ".join(f"<{k}>" for k in KEYS) + ")")
        return KEYS[name]
    return _NAME.sub(one, text)


def parse(specs: list[str]) -> list[KeyStep]:
    out = []
    for spec in specs:
        kind, sep, text = spec.partition("=")
        if not sep or kind not in ("wait", "keys"):
            raise UsageError(f"--after-edit {spec!r}: a step is wait=TEXT or keys=TEXT")
        if kind == "wait":
            text = _SPACE.sub(" ", text).strip()
            if not text:
                raise UsageError(f"--after-edit {spec!r}: nothing to wait for")
            out.append(KeyStep("wait", text))
        else:
            out.append(KeyStep("keys", _keys(text, spec)))
    return out


def screen_text(raw: bytes) -> str:
    """A terminal's output as plain text: escapes gone, white space runs one space."""
    text = _ESCAPE.sub(b" ", raw).decode("utf-8", "replace")
    return _SPACE.sub(" ", text)


def shown(raw: bytes, text: str) -> bool:
    return text in screen_text(raw)
