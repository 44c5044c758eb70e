"""JSON with comments, parsed into values *and* the text spans they came from.

Guarantees:
- `parse(text)` accepts strict JSON plus `//` and `/* */` comments and trailing commas
  (Zed settings, VS Code files are JSONC); the values equal what `json.loads` gives
  for the same text without comments (strings are decoded by `json` itself, so escapes,
  surrogate pairs and unicode behave identically; duplicate keys: last one wins).
- Every value becomes a `Node` that knows its `[start, end)` character offsets in the
  text; object members know the span of their key too, and objects/arrays know where
  their separating commas are. That is what lets `hosts` edit a config textually and
  leave every other byte (order, comments, indentation, line endings) alone.
- Malformed input raises `ConfigError(path, msg, line=, column=)`, 1-based, columns in
  characters (a leading BOM is the caller's business: strip it first).
Stdlib only and regex-driven, so a multi-megabyte `~/.claude.json` parses quickly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mcp_tether.errors import ConfigError

if TYPE_CHECKING:
    from typing import Any

__all__ = ["Node", "Member", "parse", "loads", "line_col", "skip_space"]

MAX_DEPTH = 200  # two frames a level: well inside the default recursion limit

# Whitespace and comments, as one token. An unterminated /* is caught separately.
_SPACE = re.compile(r"(?:[ \t\r\n]+|//[^\n]*|/\*.*?\*/)*", re.S)
# A well-formed JSON string: no raw control characters, only the legal escapes.
_STRING = re.compile(r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_LITERALS = {"true": True, "false": False, "null": None}


@dataclass
class Node:
    """One JSON value: its kind, Python value and `[start, end)` span in the text.

    `members` (objects) and `items` (arrays) are in source order; `commas[i]` is the
    offset of the comma after member/item i, or -1 when there is none.
    """

    kind: str  # "object" | "array" | "string" | "number" | "true" | "false" | "null"
    start: int
    end: int
    value: Any
    members: list[Member] = field(default_factory=list)
    items: list[Node] = field(default_factory=list)
    commas: list[int] = field(default_factory=list)
    style: str = ""  # "" JSON; YAML: "block" or "flow" collections, quote char of scalars

    def get(self, key: str) -> Member | None:
        """The (last, like json) member named `key` of an object node, or None."""
        for member in reversed(self.members):
            if member.key == key:
                return member
        return None

    def text(self, source: str) -> str:
        return source[self.start : self.end]


@dataclass
class Member:
    """`"key": value` inside an object; `key_start`/`key_end` span the quoted key."""

    key: str
    key_start: int
    key_end: int
    value: Node

    @property
    def start(self) -> int:
        return self.key_start

    @property
    def end(self) -> int:
        return self.value.end


def line_col(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of a character offset."""
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return line, column


def skip_space(text: str, pos: int) -> int:
    """The offset of the first character at or after `pos` that is not space/comment."""
    m = _SPACE.match(text, pos)
    return m.end() if m else pos


class _Parser:
    def __init__(self, text: str, path: str) -> None:
        self.text = text
        self.path = path

    def fail(self, pos: int, msg: str) -> ConfigError:
        line, column = line_col(self.text, pos)
        return ConfigError(self.path, msg, line=line, column=column)

    def space(self, pos: int) -> int:
        pos = skip_space(self.text, pos)
        if self.text.startswith("/*", pos):
            raise self.fail(pos, "unterminated /* comment")
        if self.text.startswith("/", pos):
            raise self.fail(pos, "stray '/' (comments are // or /* */)")
        return pos

    def document(self) -> Node:
        pos = self.space(0)
        if pos >= len(self.text):
            raise self.fail(pos, "empty document, expected a JSON value")
        node = self.value(pos, 0)
        end = self.space(node.end)
        if end < len(self.text):
            raise self.fail(end, f"unexpected {self.describe(end)} after the JSON value")
        return node

    def describe(self, pos: int) -> str:
        if pos >= len(self.text):
            return "end of file"
        return repr(self.text[pos])

    def value(self, pos: int, depth: int) -> Node:
        text = self.text
        if pos >= len(text):
            raise self.fail(pos, "unexpected end of file, expected a value")
        ch = text[pos]
        if ch == "{" or ch == "[":
            if depth >= MAX_DEPTH:
                raise self.fail(pos, f"nesting deeper than {MAX_DEPTH}")
            return self.container(pos, depth)
        if ch == '"':
            end = self.string_end(pos)
            return Node("string", pos, end, json.loads(text[pos:end]))
        m = _NUMBER.match(text, pos)
        if m and m.end() > pos:
            raw = m.group()
            try:
                num: int | float = float(raw) if any(c in raw for c in ".eE") else int(raw)
            except ValueError:  # Python refuses int() of more than 4300 digits
                raise self.fail(pos, f"number of {len(raw)} digits is too long") from None
            return Node("number", pos, m.end(), num)
        for word, val in _LITERALS.items():
            if text.startswith(word, pos):
                return Node(word, pos, pos + len(word), val)
        raise self.fail(pos, f"unexpected {self.describe(pos)}, expected a value")

    def string_end(self, pos: int) -> int:
        m = _STRING.match(self.text, pos)
        if m:
            return m.end()
        # Slow path only to say exactly what is wrong, and where.
        i = pos + 1
        text = self.text
        while i < len(text):
            c = text[i]
            if c == '"':
                break  # unreachable for a regex miss, kept for safety
            if c == "\\":
                esc = text[i + 1 : i + 2]
                if esc == "u":
                    if not re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                        raise self.fail(i, "bad \\u escape (needs 4 hex digits)")
                    i += 6
                    continue
                if esc and esc in '"\\/bfnrt':
                    i += 2
                    continue
                raise self.fail(i, f"bad escape \\{esc}" if esc else "unterminated string")
            if c < " ":
                what = "newline" if c in "\r\n" else f"control character {c!r}"
                raise self.fail(i, f"{what} inside a string (unterminated string?)")
            i += 1
        raise self.fail(pos, "unterminated string")

    def container(self, pos: int, depth: int) -> Node:
        """The object or array whose `{` or `[` is at `pos` (a trailing comma is allowed)."""
        text = self.text
        obj = text[pos] == "{"
        close, what = ("}", "a member") if obj else ("]", "an item")
        node = Node("object", pos, pos, {}) if obj else Node("array", pos, pos, [])
        pos = self.space(pos + 1)
        while not text.startswith(close, pos):
            if obj:
                if not text.startswith('"', pos):
                    raise self.fail(pos, f"expected a \"key\" or '}}', found {self.describe(pos)}")
                key_end = self.string_end(pos)
                key = json.loads(text[pos:key_end])
                colon = self.space(key_end)
                if not text.startswith(":", colon):
                    raise self.fail(colon, f"expected ':' after key {key!r}")
                val = self.value(self.space(colon + 1), depth + 1)
                node.members.append(Member(key, pos, key_end, val))
                node.value[key] = val.value
            else:
                val = self.value(pos, depth + 1)
                node.items.append(val)
                node.value.append(val.value)
            pos = self.space(val.end)
            if text.startswith(",", pos):
                node.commas.append(pos)
                pos = self.space(pos + 1)
                continue
            node.commas.append(-1)
            if not text.startswith(close, pos):
                raise self.fail(pos, f"expected ',' or '{close}' after {what}, found "
                                f"{self.describe(pos)}")
        node.end = pos + 1
        return node


def parse(text: str, path: str = "<string>") -> Node:
    """Parse JSONC `text` into a `Node` tree; `path` only names the file in errors."""
    return _Parser(text, path).document()


def loads(text: str, path: str = "<string>") -> Any:
    """Parse JSONC `text` into plain Python values."""
    return parse(text, path).value
