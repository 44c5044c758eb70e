"""The text edits that put the guard in front of an entry, and take it out again (JSONC, YAML).

Guarantees: only the command value and the front of the args (or of OpenCode's command
array) change; every other byte stays. What wrap inserts, exactly (RAW is the source
text of the original command value, byte for byte):
  * args present, one line (JSON, YAML flow): `"run", "--", RAW, ` right after `[`
    (no trailing `, ` when the array was empty);
  * args present, one item per line (whitespace WS with a newline before the first
    item): `WS"run",WS"--",WSRAW,` right after `[`, so it matches;
  * YAML block sequence: `- "run"`, `- "--"`, `- RAW` lines before the first item, at
    its indentation;
  * no args key: JSON `, "args": [ "run", "--", RAW ]` right after the command value
    (the blank after `[` is the marker: the other forms never put one there, so
    unwrap takes the whole member out again); YAML block mapping: a new line
    `args: ["run", "--", RAW]` at the command key's indentation.
Unwrap is the exact inverse for these forms and a sensible removal for hand-made ones;
the caller re-reads the result and checks it before anything is written.
"""

from __future__ import annotations

import json

from mcp_tether.hosts.diff import Edit
from mcp_tether.hosts.jsonc import Node
from mcp_tether.hosts.model import Launch

__all__ = ["wrap_edits", "unwrap_edits"]


def _obj(node: Node, launch: Launch) -> Node:
    for key in launch.obj_path:
        member = node.get(key)
        assert member is not None
        node = member.value
    return node


def _line_indent(text: str, pos: int) -> str:
    return text[text.rfind("\n", 0, pos) + 1 : pos]


def _absent_args(text: str, fmt: str, obj: Node, cmd_key_start: int, key: str, raw: str) -> str:
    if fmt == "yaml" and obj.style == "block":
        return f'\n{_line_indent(text, cmd_key_start)}{key}: ["run", "--", {raw}]'
    if fmt == "yaml":
        return f', {key}: ["run", "--", {raw}]'
    return f', {json.dumps(key)}: [ "run", "--", {raw} ]'


def _insert_front(text: str, arr: Node, words: list[str]) -> Edit:
    if arr.style == "block":
        indent = _line_indent(text, arr.start)
        return (arr.start, arr.start, "".join(f"- {w}\n{indent}" for w in words))
    after = arr.start + 1
    if not arr.items:
        return (after, after, ", ".join(words))
    lead = text[after : arr.items[0].start]
    if "\n" in lead and not lead.strip():
        return (after, after, "".join(f"{lead}{w}," for w in words))
    return (after, after, ", ".join(words) + ", ")


def _comma_after(text: str, arr: Node, i: int) -> int:
    comma = arr.commas[i] if i < len(arr.commas) else -1
    return comma if comma >= 0 else text.find(",", arr.items[i].end)


def _remove_front(text: str, arr: Node, n: int) -> Edit:
    items = arr.items
    if arr.style == "block":
        if n >= len(items):
            return (arr.start, items[-1].end, "[]")
        return (arr.start, text.rfind("-", arr.start, items[n].start), "")
    if n >= len(items):
        return (items[0].start, items[-1].end, "")
    comma = _comma_after(text, arr, n - 1)
    lead = text[arr.start + 1 : items[0].start]
    if "\n" in lead and not lead.strip():
        return (arr.start + 1, comma + 1, "")
    end = comma + 2 if text[comma + 1 : comma + 2] == " " else comma + 1
    return (items[0].start, end, "")


def wrap_edits(text: str, fmt: str, node: Node, launch: Launch, argv0: str) -> list[Edit]:
    """The edits that put `argv0 run --` in front of one entry."""
    obj = _obj(node, launch)
    cmd = obj.get(launch.cmd_key)
    assert cmd is not None
    head = json.dumps(argv0, ensure_ascii=False)
    if launch.kind == "argv":
        return [_insert_front(text, cmd.value, [head, '"run"', '"--"'])]
    raw = cmd.value.text(text)
    edits: list[Edit] = [(cmd.value.start, cmd.value.end, head)]
    args = obj.get(launch.args_key)
    if args is None:
        absent = _absent_args(text, fmt, obj, cmd.key_start, launch.args_key, raw)
        edits.append((cmd.value.end, cmd.value.end, absent))
    else:
        edits.append(_insert_front(text, args.value, ['"run"', '"--"', raw]))
    return edits


def unwrap_edits(
    text: str, fmt: str, node: Node, launch: Launch, prefix: int
) -> list[Edit]:
    """The edits that undo `wrap_edits` exactly (`prefix` guard words precede the command)."""
    obj = _obj(node, launch)
    cmd = obj.get(launch.cmd_key)
    assert cmd is not None
    if launch.kind == "argv":
        return [_remove_front(text, cmd.value, prefix + 1)]
    args = obj.get(launch.args_key)
    assert args is not None
    arr = args.value
    raw = arr.items[prefix].text(text)
    edits: list[Edit] = [(cmd.value.start, cmd.value.end, raw)]
    absent = _absent_args(text, fmt, obj, cmd.key_start, launch.args_key, raw)
    if (
        prefix == 2
        and len(arr.items) == 3
        and args.key_start > cmd.value.end
        and text[cmd.value.end : arr.end] == absent
    ):
        edits.append((cmd.value.end, arr.end, ""))  # the member wrap added, whole
        return edits
    edits.append(_remove_front(text, arr, prefix + 1))
    return edits
