"""`wrap` and `unwrap` of one config file: decide, edit, verify, write.

Guarantees:
- Only entries that can be wrapped are: remote entries, entries already behind the
  guard (with or without options: `run --grace 1 -- ...`, `python -m mcp_tether run`),
  and entries wrapping would break (`safety.hazard`) are skipped with a one-line
  reason; `force=True` wraps the last kind anyway.
- A project file (or a `--config` file) inside a version-controlled tree is left alone
  unless `project=True`; an administrator's managed file is always left alone. In a
  shared file the guard is written as the bare name `mcp-tether` (found on PATH), never
  this machine's absolute path; a user's own file gets the absolute path (GUI hosts
  launch with a minimal PATH).
- Before anything is written the new text is parsed again and checked: every changed
  entry launches exactly the old argv behind the guard (or, unwrapped, the old inner
  argv), and for wrap, unwrapping the result gives back the original bytes. An entry
  whose layout fails that is skipped ("cannot be edited exactly"), never half-edited.
  `unwrap(wrap(x)) == x` byte for byte; wrapping twice changes nothing the second time.
- Writing goes through `atomic.write_config` (state-folder backup, crash-safe replace).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from mcp_tether.errors import ConfigError
from mcp_tether.hosts import atomic, diff, spans, toml
from mcp_tether.hosts.locations import ANY_SHAPE, format_of, host_of
from mcp_tether.hosts.model import ChangeResult, Doc, Machine, Shape, Spot
from mcp_tether.hosts.read import from_bytes, load
from mcp_tether.hosts.safety import hazard, work_tree

__all__ = ["change", "wrap", "unwrap", "PORTABLE_NAME"]

PORTABLE_NAME = "mcp-tether"
INEXACT = "cannot be edited exactly in this layout (left as it is)"


def _shape(host: str | None) -> Shape:
    h = host_of(host)
    return h.shape if h else ANY_SHAPE


def _render(doc: Doc, todo: list[Spot], action: str, argv0: str) -> tuple[str, str]:
    """(new text, diff) with `todo` wrapped or unwrapped."""
    if doc.format == "toml":
        fresh = toml.parse(doc.text, str(doc.path))
        keyed = {s.entry.key_path: s for s in toml.spots(fresh, _shape_of(doc), None, doc.path)}
        for spot in todo:
            target = keyed[spot.entry.key_path]
            launch = target.launch
            assert launch is not None
            obj = target.node
            for key in launch.obj_path:
                obj = obj[key]
            if action == "wrap":
                toml.wrap_entry(obj, launch.cmd_key, launch.args_key, argv0)
            else:
                toml.unwrap_entry(obj, launch.cmd_key, launch.args_key, spot.entry.guard_prefix)
        new = toml.dumps(fresh)
        return new, diff.diff_texts(doc.path, doc.text, new, action)
    edits: list[diff.Edit] = []
    for spot in todo:
        assert spot.launch is not None
        if action == "wrap":
            edits += spans.wrap_edits(doc.text, doc.format, spot.node, spot.launch, argv0)
        else:
            edits += spans.unwrap_edits(doc.text, doc.format, spot.node, spot.launch,
                                        spot.entry.guard_prefix)
    return diff.apply(doc.text, edits), diff.diff(doc.path, doc.text, edits, action)


def _shape_of(doc: Doc) -> Shape:
    return doc.shape or ANY_SHAPE


def _reparse(doc: Doc, text: str) -> Doc | None:
    try:
        new = from_bytes(doc.path, doc.real, (doc.bom + text).encode("utf-8", "surrogatepass"),
                         doc.format, _shape_of(doc), None)
    except ConfigError:
        return None
    return new


def _verified(doc: Doc, todo: list[Spot], action: str, argv0: str, text: str) -> bool:
    """Does `text` launch what it should for every entry of `todo` (see the module doc)?"""
    new = _reparse(doc, text)
    if new is None:
        return False
    after = {s.entry.key_path: s for s in new.spots}
    for spot in todo:
        got = after.get(spot.entry.key_path)
        if got is None or got.launch is None:
            return False
        if action == "wrap":
            if not got.entry.wrapped or got.entry.command != argv0:
                return False
            if got.entry.guarded_argv != [spot.entry.command, *spot.entry.args]:
                return False
        elif got.entry.wrapped or [got.entry.command, *got.entry.args] != spot.entry.guarded_argv:
            return False
    if action == "wrap":
        back, _ = _render(new, [after[s.entry.key_path] for s in todo], "unwrap", argv0)
        return back == doc.text
    return True


def _exact(doc: Doc, todo: list[Spot], action: str, argv0: str) -> tuple[list[Spot], list[Spot]]:
    """(entries that edit exactly, entries that do not): all at once, else one by one."""
    if not todo:
        return [], []
    text, _ = _render(doc, todo, action, argv0)
    if _verified(doc, todo, action, argv0, text):
        return todo, []
    good: list[Spot] = []
    bad: list[Spot] = []
    for spot in todo:
        one, _ = _render(doc, [spot], action, argv0)
        (good if _verified(doc, [spot], action, argv0, one) else bad).append(spot)
    return good, bad


def change(
    path: Path | str,
    host: str | None,
    action: str,
    *,
    tether_argv0: str | None = None,
    dry_run: bool = False,
    force: bool = False,
    project: bool = False,
    scope: str = "config",
    machine: Machine | None = None,
    keep: Callable[[str], bool] | None = None,
) -> ChangeResult:
    """Wrap or unwrap the entries of one file (see the module doc); `keep` filters names."""
    path = Path(path)
    h = host_of(host)
    shape = h.shape if h else ANY_SHAPE
    result = ChangeResult(path, host, action, dry_run=dry_run)
    if scope == "managed":
        result.refused = "managed by an administrator: not ours to edit"
        return result
    doc = load(path, format_of(path, host), shape, host)
    tree = work_tree(doc.real) if scope in ("project", "config") else None
    if tree is not None and not project:
        result.refused = (f"in a version-controlled tree ({tree}): left alone; "
                          "pass --project to edit it")
        return result
    shared = scope == "project" or tree is not None
    argv0 = PORTABLE_NAME if shared or not tether_argv0 else os.path.abspath(tether_argv0)
    m = machine or Machine.here()
    todo: list[Spot] = []
    for spot in doc.spots:
        entry, label = spot.entry, spot.entry.label
        if keep is not None and not (keep(entry.name) or keep(label)):
            continue
        if spot.launch is None:
            result.skipped.append((label, spot.problem))
        elif action == "wrap" and entry.wrapped:
            result.skipped.append((label, "already wrapped"))
        elif action == "unwrap" and not entry.wrapped:
            result.skipped.append((label, "not wrapped"))
        elif action == "wrap" and not force and (why := hazard(entry, h, m)):
            result.skipped.append((label, why))
        else:
            todo.append(spot)
    good, bad = _exact(doc, todo, action, argv0)
    result.skipped += [(s.entry.label, INEXACT) for s in bad]
    result.changed = [s.entry.label for s in good]
    if not good:
        return result
    new_text, result.diff = _render(doc, good, action, argv0)
    if not dry_run:
        new = (doc.bom + new_text).encode("utf-8", "surrogatepass")
        result.backup = atomic.write_config(doc.path, doc.real, doc.raw, new)
        result.written = True
    return result


def wrap(
    path: Path | str, host: str | None, tether_argv0: str | None = None, *,
    dry_run: bool = False, force: bool = False, project: bool = False, scope: str = "config",
    machine: Machine | None = None,
) -> ChangeResult:
    """Put `mcp-tether run --` in front of every stdio entry of one config file.

    `tether_argv0` is the installed `mcp-tether`, written absolute in a user's own file
    (hosts launch with a minimal PATH) and as the bare name in a shared one.
    """
    return change(path, host, "wrap", tether_argv0=tether_argv0, dry_run=dry_run, force=force,
                  project=project, scope=scope, machine=machine)


def unwrap(
    path: Path | str, host: str | None, tether_argv0: str | None = None, *,
    dry_run: bool = False, project: bool = False, scope: str = "config",
) -> ChangeResult:
    """Take the guard out again: the exact inverse of `wrap` on the entries it wrapped."""
    return change(path, host, "unwrap", tether_argv0=tether_argv0, dry_run=dry_run,
                  project=project, scope=scope)
