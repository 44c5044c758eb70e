"""`json.dumps(obj, indent=N)`, byte for byte, without importing `json`.

Why: `json.encoder` imports `re` (and `re` imports `enum`): ~10 ms of every
`mcp-tether ps --json`, a command held to 1.5x of `ps(1)` (issue 10), which otherwise
needs neither. Strings are escaped by the same C function `json` uses
(`_json.encode_basestring_ascii`); where that is missing (not CPython), `json` itself
is used. Same types as `json.dumps` with its defaults: dict (str, int, float, bool and
None keys), list, tuple, str, int, float (NaN and Infinity as json writes them), bool,
None; anything else is a TypeError, as there. No cycle check: our documents are trees.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = ["dumps"]

_escape: Callable[[str], str] | None
try:
    from _json import encode_basestring_ascii as _escape
except ImportError:  # pragma: no cover - CPython always has it
    _escape = None


def dumps(obj: object, indent: int = 2) -> str:
    """What `json.dumps(obj, indent=indent)` returns."""
    if _escape is None:  # pragma: no cover
        import json

        return json.dumps(obj, indent=indent)
    out: list[str] = []
    _emit(obj, out, "\n", " " * indent)
    return "".join(out)


def _float(f: float) -> str:
    if f != f:
        return "NaN"
    if f in (float("inf"), float("-inf")):
        return "Infinity" if f > 0 else "-Infinity"
    return float.__repr__(f)


def _key(k: object) -> str:
    if isinstance(k, str):
        return k
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, float):
        return _float(k)
    if isinstance(k, int):
        return int.__repr__(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def _scalar(o: object) -> str:
    """A leaf: str, None, bool, int or float (subclasses as json treats them)."""
    esc = _escape
    assert esc is not None
    t = type(o)
    if t is str:
        return esc(o)  # type: ignore[arg-type]  # t is str
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if t is int:
        return int.__repr__(o)
    if isinstance(o, str):
        return esc(o)
    if isinstance(o, int):
        return int.__repr__(o)
    if isinstance(o, float):
        return _float(o)
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _emit(o: object, out: list[str], nl: str, step: str) -> None:
    # Leaves are written by the loop that meets them (no call per leaf: most values
    # of a `ps --json` document are leaves, and a thousand leaked servers make 2 MB).
    esc = _escape
    assert esc is not None
    if isinstance(o, dict):
        if not o:
            out.append("{}")
            return
        inner = nl + step
        sep = "{" + inner
        for k, v in o.items():
            head = sep + esc(k if type(k) is str else _key(k)) + ": "
            sep = "," + inner
            t = type(v)
            if t is str:
                out.append(head + esc(v))
            elif t is dict or t is list or isinstance(v, (dict, list, tuple)):
                out.append(head)
                _emit(v, out, inner, step)
            else:
                out.append(head + _scalar(v))
        out.append(nl + "}")
    elif isinstance(o, (list, tuple)):
        if not o:
            out.append("[]")
            return
        inner = nl + step
        sep = "[" + inner
        for v in o:
            t = type(v)
            if t is str:
                out.append(sep + esc(v))
            elif isinstance(v, (dict, list, tuple)):
                out.append(sep)
                _emit(v, out, inner, step)
            else:
                out.append(sep + _scalar(v))
            sep = "," + inner
        out.append(nl + "]")
    else:
        out.append(_scalar(o))
