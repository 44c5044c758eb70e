"""Host config files: where they live, which servers they hold, and rewriting them safely.

Guarantees:
- Discovery only reports files that exist; every platform path comes from one function,
  `config_locations(platform, home, env, cwd)`, so tests fake a whole machine.
- Reading never fails on a remote (HTTP/SSE) entry or an extension-provided one: those
  are listed with `transport="remote"` and left alone. A malformed file is a
  `ConfigError` naming file:line:column, and the file is not touched.
- `wrap` and `unwrap` edit the text, never re-serialize it: only the `command` value and
  the front of `args` change; key order, other keys, comments, indentation and line
  endings stay byte-identical. `unwrap(wrap(x)) == x` byte for byte for a file that had
  no wrapped entries, and wrapping twice changes nothing the second time.
- What wrap inserts, exactly (RAW is the command's original JSON text, byte for byte):
  * `"args"` present, single-line style: `"run", "--", RAW, ` right after `[`
    (no trailing `, ` when the array was empty);
  * `"args"` present, one item per line (whitespace with a newline between `[` and
    the first item, WS): `WS"run",WS"--",WSRAW,` right after `[`, so it matches;
  * no `"args"` key: `, "args": [ "run", "--", RAW ]` right after the command value.
    The space after `[` is the marker: the other two forms never put a blank there,
    so unwrap knows to take the whole member out again rather than leave `"args": []`.
- Writing: a backup first, then a temp file in the same folder, fsync, `os.replace`
  (the file is the old one or the new one, never half of each), fsync of the folder.
  The file mode (and owner, when we may) is kept; a symlinked config is edited at its
  target so the link survives. Backup rule: `<file>.mcp-tether.bak` is created once and
  never overwritten (it is the pre-tether original); when it exists and differs from
  the current file, the backup goes to the first free `<file>.mcp-tether.bak.N`
  (N = 1, 2, ...). Backups are created exclusively (O_EXCL) with the file's mode:
  configs hold API keys in `env`.
- A host that rewrites its own config (Claude Code rewrites `~/.claude.json` often) can
  race us: right before the replace we re-read the file and refuse if it changed since
  we parsed it. The window left is the few microseconds of the replace itself.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_tether import jsonc
from mcp_tether.errors import ConfigError

__all__ = [
    "HOSTS",
    "ConfigFile",
    "ServerEntry",
    "ChangeResult",
    "config_locations",
    "discover",
    "read_servers",
    "configured_servers",
    "wrap",
    "unwrap",
    "is_tether_command",
    "backup_path",
]

# Host name -> key paths of the server tables in its files ("*" = every key there).
SERVER_TABLES: dict[str, tuple[tuple[str, ...], ...]] = {
    "claude-desktop": (("mcpServers",),),
    "claude-code": (("mcpServers",), ("projects", "*", "mcpServers")),
    "cursor": (("mcpServers",),),
    "vscode": (("servers",), ("mcp", "servers")),  # mcp.json; older settings.json form
    "windsurf": (("mcpServers",),),
    "zed": (("context_servers",),),
}
HOSTS: tuple[str, ...] = tuple(SERVER_TABLES)
# `--config FILE` with no host: any of the shapes above.
ANY_TABLES: tuple[tuple[str, ...], ...] = (
    ("mcpServers",),
    ("projects", "*", "mcpServers"),
    ("servers",),
    ("mcp", "servers"),
    ("context_servers",),
)
REMOTE_TYPES_NOT = (None, "stdio")  # any other "type" (http, sse, streamable-http) is remote
BACKUP_SUFFIX = ".mcp-tether.bak"
TETHER_NAMES = ("mcp-tether", "mcp-tether.exe")


@dataclass(frozen=True)
class ConfigFile:
    """One host config file: who reads it, at which scope, and where it is."""

    host: str
    scope: str  # "user" | "project"
    path: Path


@dataclass
class ServerEntry:
    """One server of a config file, as the host would launch it."""

    name: str
    host: str | None
    path: Path
    key_path: tuple[str, ...]  # from the JSON root to this entry
    command: str | None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    transport: str = "stdio"  # "stdio" | "remote"
    wrapped: bool = False  # already behind `mcp-tether run --`
    disabled: bool = False

    @property
    def label(self) -> str:
        """The name, plus the project for Claude Code's local scope (names repeat there)."""
        if len(self.key_path) == 4 and self.key_path[0] == "projects":
            return f"{self.name} [{self.key_path[1]}]"
        return self.name

    @property
    def guarded_argv(self) -> list[str]:
        """The server's own argv: behind the guard when wrapped, else the command."""
        if self.command is None:
            return []
        if self.wrapped:
            return self.args[2:]
        return [self.command, *self.args]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "host": self.host,
            "path": str(self.path),
            "key_path": list(self.key_path),
            "command": self.command,
            "args": self.args,
            "env": self.env,
            "cwd": self.cwd,
            "transport": self.transport,
            "wrapped": self.wrapped,
            "disabled": self.disabled,
        }


@dataclass
class ChangeResult:
    """What `wrap`/`unwrap` did (or would do, on a dry run) to one file."""

    path: Path
    host: str | None
    action: str  # "wrap" | "unwrap"
    changed: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (label, reason)
    diff: str = ""
    written: bool = False
    dry_run: bool = False
    backup: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "host": self.host,
            "action": self.action,
            "changed": self.changed,
            "skipped": [{"name": n, "reason": r} for n, r in self.skipped],
            "diff": self.diff,
            "written": self.written,
            "dry_run": self.dry_run,
            "backup": str(self.backup) if self.backup else None,
        }


# --- where the files are -------------------------------------------------------------


def config_locations(
    platform: str, home: Path, env: Mapping[str, str], cwd: Path | None = None
) -> list[ConfigFile]:
    """Every place a known host may keep MCP servers, existing or not, in search order.

    `platform` is a `sys.platform` value ("linux", "darwin", "win32"); `home` and `env`
    stand for `Path.home()` and `os.environ`; project files are looked up in `cwd`.
    """
    home = Path(home)
    mac_support = home / "Library" / "Application Support"
    if platform == "win32":
        appdata = Path(env.get("APPDATA") or home / "AppData" / "Roaming")
        app_dir = appdata
    elif platform == "darwin":
        app_dir = mac_support
    else:
        app_dir = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    xdg = Path(env.get("XDG_CONFIG_HOME") or home / ".config")

    out: list[ConfigFile] = []

    def add(host: str, scope: str, path: Path) -> None:
        out.append(ConfigFile(host, scope, path))

    # Claude Desktop: macOS and Windows officially; Linux community builds use XDG.
    add("claude-desktop", "user", app_dir / "Claude" / "claude_desktop_config.json")
    # Claude Code: one file for user and local scope; CLAUDE_CONFIG_DIR moves it.
    claude_dir = env.get("CLAUDE_CONFIG_DIR")
    if claude_dir:
        add("claude-code", "user", Path(claude_dir) / ".claude.json")
    add("claude-code", "user", home / ".claude.json")
    add("cursor", "user", home / ".cursor" / "mcp.json")
    for product in ("Code", "Code - Insiders"):
        add("vscode", "user", app_dir / product / "User" / "mcp.json")
    add("windsurf", "user", home / ".codeium" / "windsurf" / "mcp_config.json")
    if platform == "win32":
        add("zed", "user", app_dir / "Zed" / "settings.json")
    else:
        add("zed", "user", xdg / "zed" / "settings.json")  # ~/.config on macOS too
    if cwd is not None:
        cwd = Path(cwd)
        add("claude-code", "project", cwd / ".mcp.json")
        add("cursor", "project", cwd / ".cursor" / "mcp.json")
        add("vscode", "project", cwd / ".vscode" / "mcp.json")
        add("zed", "project", cwd / ".zed" / "settings.json")
    seen: set[Path] = set()
    unique = []
    for cf in out:  # with cwd == home, project and user files can coincide
        if cf.path not in seen:
            seen.add(cf.path)
            unique.append(cf)
    return unique


def discover(
    host: str | None = None,
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> list[ConfigFile]:
    """The config files of `host` (or of every known host) that exist here.

    `env` defaults to `os.environ`, but to `{}` when `home` is given: a fake home must
    not lead, through a real XDG_CONFIG_HOME or APPDATA, to the real config files.
    """
    if host is not None and host not in SERVER_TABLES:
        raise ValueError(f"unknown host {host!r}")
    if env is None:
        env = os.environ if home is None else {}
    found = config_locations(
        platform or sys.platform,
        Path.home() if home is None else Path(home),
        env,
        Path.cwd() if cwd is None else Path(cwd),
    )
    return [cf for cf in found if (host is None or cf.host == host) and cf.path.is_file()]


# --- reading -------------------------------------------------------------------------


@dataclass
class _Doc:
    path: Path  # as given (for messages)
    real: Path  # symlinks resolved (what we write)
    raw: bytes
    bom: str
    text: str
    root: jsonc.Node


def _load(path: Path) -> _Doc:
    path = Path(path)
    try:
        real = path.resolve()
        raw = real.read_bytes()
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), f"not UTF-8 (byte {exc.start})") from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text[len(bom) :]
    root = jsonc.parse(text, str(path))
    if root.kind != "object":
        raise ConfigError(str(path), "top level is not a JSON object", line=1, column=1)
    return _Doc(path, real, raw, bom, text, root)


def _tables(
    root: jsonc.Node, host: str | None
) -> Iterator[tuple[tuple[str, ...], jsonc.Node]]:
    """(key path, object node) of every server table present for this host's shapes."""
    shapes = ANY_TABLES if host is None else SERVER_TABLES.get(host, ANY_TABLES)

    def walk(node: jsonc.Node, shape: tuple[str, ...], at: tuple[str, ...]) -> Iterator[Any]:
        if node.kind != "object":
            return
        if not shape:
            yield at, node
            return
        head, rest = shape[0], shape[1:]
        if head == "*":
            for m in node.members:
                yield from walk(m.value, rest, (*at, m.key))
        else:
            member = node.get(head)
            if member is not None:
                yield from walk(member.value, rest, (*at, head))

    for shape in shapes:
        yield from walk(root, shape, ())


@dataclass
class _Spot:
    """Where an entry's launch command sits: `obj` holds the `cmd_key` string and `args`."""

    entry: ServerEntry
    obj: jsonc.Node | None  # None: nothing to launch (remote, or bad shape)
    cmd_key: str = "command"
    problem: str = ""  # why it cannot be (un)wrapped, when obj is None


def is_tether_command(command: str, tether_argv0: str | None = None) -> bool:
    """Is `command` the mcp-tether executable (by name, or the given path)?"""
    if tether_argv0 and os.path.abspath(command) == os.path.abspath(tether_argv0):
        return True
    base = command.replace("\\", "/").rsplit("/", 1)[-1].lower()
    return base in TETHER_NAMES


def _is_wrapped(command: str, args: Sequence[Any], tether_argv0: str | None = None) -> bool:
    return (
        len(args) >= 3
        and args[0] == "run"
        and args[1] == "--"
        and is_tether_command(command, tether_argv0)
    )


def _strs(value: Any) -> list[str]:
    return [v if isinstance(v, str) else json.dumps(v) for v in value]


def _spots(doc: _Doc, host: str | None, tether_argv0: str | None = None) -> list[_Spot]:
    spots = []
    for table_path, table in _tables(doc.root, host):
        for member in table.members:
            spots.append(_spot(doc, host, (*table_path, member.key), member.value, tether_argv0))
    return spots


def _spot(
    doc: _Doc, host: str | None, key_path: tuple[str, ...], node: jsonc.Node, argv0: str | None
) -> _Spot:
    name = key_path[-1]
    entry = ServerEntry(name, host, doc.path, key_path, None, transport="remote")
    if node.kind != "object":
        return _Spot(entry, None, problem="entry is not an object")
    v: dict[str, Any] = node.value
    entry.disabled = v.get("disabled") is True or v.get("enabled") is False
    obj, cmd_key = node, "command"
    command = v.get("command")
    if isinstance(command, dict):  # Zed's older form: "command": {path, args, env}
        cmd_member = node.get("command")
        assert cmd_member is not None
        obj, cmd_key, v = cmd_member.value, "path", {**v, **command}
        command = command.get("path")
    env = v.get("env")
    entry.env = {str(k): str(x) for k, x in env.items()} if isinstance(env, dict) else {}
    entry.cwd = v.get("cwd") if isinstance(v.get("cwd"), str) else None
    remote = (
        command is None
        or "url" in v
        or "serverUrl" in v
        or v.get("type") not in REMOTE_TYPES_NOT
    )
    if remote:
        why = "remote (url)" if command is None and ("url" in v or "serverUrl" in v) else ""
        why = why or ("no command (remote or extension-provided)" if command is None else "")
        return _Spot(entry, None, problem=why or f"remote (type {v.get('type')!r})")
    entry.transport = "stdio"
    if not isinstance(command, str):
        return _Spot(entry, None, problem="command is not a string")
    entry.command = command
    args = v.get("args", [])
    if not isinstance(args, list):
        return _Spot(entry, None, problem="args is not a list")
    entry.args = _strs(args)
    entry.wrapped = _is_wrapped(command, args, argv0)
    return _Spot(entry, obj, cmd_key)


def read_servers(path: Path | str, host: str | None = None) -> list[ServerEntry]:
    """Every server entry of one config file (stdio and remote), in file order.

    `host` picks the table shapes (see `SERVER_TABLES`); None accepts any known shape.
    """
    return [s.entry for s in _spots(_load(Path(path)), host)]


def configured_servers(
    host: str | None = None,
    config: Path | str | None = None,
    *,
    home: Path | None = None,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
) -> tuple[list[ServerEntry], list[ConfigError]]:
    """All entries of `config` (if given) or of the discovered files of `host` (or all).

    A malformed file does not hide the others: its error comes back in the second list.
    """
    if config is not None:
        files = [ConfigFile(host or "", "config", Path(config))]
    else:
        files = discover(host, home=home, cwd=cwd, env=env, platform=platform)
    entries: list[ServerEntry] = []
    errors: list[ConfigError] = []
    for cf in files:
        try:
            entries += read_servers(cf.path, cf.host or None)
        except ConfigError as exc:
            errors.append(exc)
    return entries, errors


# --- editing -------------------------------------------------------------------------


def _absent_args_text(raw_cmd: str) -> str:
    return f', "args": [ "run", "--", {raw_cmd} ]'


def _wrap_edits(doc: _Doc, spot: _Spot, argv0_json: str) -> list[tuple[int, int, str]]:
    """(start, end, replacement) edits that put the guard in front of one entry."""
    assert spot.obj is not None
    text = doc.text
    cmd = spot.obj.get(spot.cmd_key)
    assert cmd is not None
    raw = cmd.value.text(text)
    edits = [(cmd.value.start, cmd.value.end, argv0_json)]
    args = spot.obj.get("args")
    if args is None:
        edits.append((cmd.value.end, cmd.value.end, _absent_args_text(raw)))
        return edits
    arr = args.value
    after = arr.start + 1
    if not arr.items:
        edits.append((after, after, f'"run", "--", {raw}'))
        return edits
    lead = text[after : arr.items[0].start]
    if "\n" in lead and not lead.strip():
        ins = f'{lead}"run",{lead}"--",{lead}{raw},'
    else:
        ins = f'"run", "--", {raw}, '
    edits.append((after, after, ins))
    return edits


def _unwrap_edits(doc: _Doc, spot: _Spot) -> list[tuple[int, int, str]]:
    """The edits that undo `_wrap_edits` exactly (and a hand-made wrap sensibly)."""
    assert spot.obj is not None
    text = doc.text
    cmd = spot.obj.get(spot.cmd_key)
    args = spot.obj.get("args")
    assert cmd is not None and args is not None
    arr = args.value
    raw = arr.items[2].text(text)
    edits = [(cmd.value.start, cmd.value.end, raw)]
    if (
        len(arr.items) == 3
        and args.key_start > cmd.value.end
        and text[cmd.value.end : arr.end] == _absent_args_text(raw)
    ):
        edits.append((cmd.value.end, arr.end, ""))  # the member wrap added, whole
        return edits
    first, third = arr.items[0], arr.items[2]
    if len(arr.items) == 3:
        edits.append((first.start, third.end, ""))
        return edits
    comma = arr.commas[2]
    lead = text[arr.start + 1 : first.start]
    if "\n" in lead and not lead.strip():
        edits.append((arr.start + 1, comma + 1, ""))  # WS"run",WS"--",WSRAW,
    else:
        end = comma + 2 if text[comma + 1 : comma + 2] == " " else comma + 1
        edits.append((first.start, end, ""))
    return edits


def _apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Apply non-overlapping edits in one pass (a big ~/.claude.json gets many)."""
    out, pos = [], 0
    for start, end, new in sorted(edits, key=lambda e: (e[0], e[1])):
        out += [text[pos:start], new]
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _diff(
    path: Path, old: str, edits: list[tuple[int, int, str]], action: str, context: int = 3
) -> str:
    """A unified diff of `edits` on `old`, built from the edits themselves.

    Not difflib: its matcher goes quadratic on a multi-megabyte `~/.claude.json` full
    of similar lines, and we already know exactly which lines change.
    """
    lines = old.splitlines(keepends=True)
    starts: list[int] = []
    pos = 0
    for line in lines:
        starts.append(pos)
        pos += len(line)

    def line_of(offset: int) -> int:
        return max(0, bisect.bisect_right(starts, offset) - 1)

    blocks: list[list[Any]] = []  # [first line, last line, edits on them]
    for edit in sorted(edits, key=lambda e: (e[0], e[1])):
        lo, hi = line_of(edit[0]), line_of(max(edit[0], edit[1] - 1))
        if blocks and lo <= blocks[-1][1]:
            blocks[-1][1] = max(blocks[-1][1], hi)
            blocks[-1][2].append(edit)
        else:
            blocks.append([lo, hi, [edit]])
    changes: list[tuple[int, int, list[str]]] = []  # old lines [lo, hi) -> new lines
    for lo, hi, block_edits in blocks:
        base = starts[lo]
        segment = old[base : starts[hi] + len(lines[hi])]
        shifted = [(s - base, e - base, n) for s, e, n in block_edits]
        new_lines = _apply(segment, shifted).splitlines(keepends=True)
        hi += 1
        while lo < hi and new_lines and lines[lo] == new_lines[0]:  # unchanged head
            lo, new_lines = lo + 1, new_lines[1:]
        while lo < hi and new_lines and lines[hi - 1] == new_lines[-1]:  # unchanged tail
            hi, new_lines = hi - 1, new_lines[:-1]
        changes.append((lo, hi, new_lines))
    groups: list[list[tuple[int, int, list[str]]]] = []
    for change in changes:
        if groups and change[0] - groups[-1][-1][1] <= 2 * context:
            groups[-1].append(change)
        else:
            groups.append([change])

    out = [f"--- {path}\n", f"+++ {path} ({action}ped)\n"]
    shift = 0  # new-file line number minus old-file line number so far
    for group in groups:
        h_lo = max(0, group[0][0] - context)
        h_hi = min(len(lines), group[-1][1] + context)
        body: list[str] = []
        cur = h_lo
        new_count = 0
        for lo, hi, new_lines in group:
            body += [" " + line for line in lines[cur:lo]]
            body += ["-" + line for line in lines[lo:hi]]
            body += ["+" + line for line in new_lines]
            new_count += (lo - cur) + len(new_lines)
            cur = hi
        body += [" " + line for line in lines[cur:h_hi]]
        new_count += h_hi - cur
        out.append(f"@@ -{h_lo + 1},{h_hi - h_lo} +{h_lo + shift + 1},{new_count} @@\n")
        out += [line if line.endswith("\n") else line + "\n" for line in body]
        shift += new_count - (h_hi - h_lo)
    return "".join(out)


def backup_path(path: Path) -> Path:
    """Where the next backup of `path` goes (see the module docstring for the rule)."""
    first = path.with_name(path.name + BACKUP_SUFFIX)
    if not first.exists():
        return first
    n = 1
    while True:
        candidate = path.with_name(f"{path.name}{BACKUP_SUFFIX}.{n}")
        if not candidate.exists():
            return candidate
        n += 1


def _write_backup(real: Path, raw: bytes, mode: int) -> Path | None:
    """Keep a copy of `raw`; None when the newest backup already holds exactly these bytes."""
    newest = real.with_name(real.name + BACKUP_SUFFIX)
    n = 0
    while True:  # the newest existing backup: .bak, then .bak.1, .bak.2 ...
        nxt = real.with_name(f"{real.name}{BACKUP_SUFFIX}.{n + 1}")
        if not nxt.exists():
            break
        newest, n = nxt, n + 1
    try:
        if newest.exists() and newest.read_bytes() == raw:
            return None
    except OSError:
        pass
    while True:
        target = backup_path(real)
        try:
            # O_EXCL: a backup that appeared meanwhile is never overwritten.
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode & 0o777)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as fh:
            fh.write(raw)
            fh.flush()
            os.fsync(fh.fileno())
        return target


def _atomic_write(doc: _Doc, data: bytes) -> Path | None:
    """Backup, then temp file + fsync + os.replace. Returns the backup written, if any."""
    real = doc.real
    try:
        st = real.stat()
        backup = _write_backup(real, doc.raw, st.st_mode)
        fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    except OSError as exc:
        raise ConfigError(str(doc.path), f"cannot back up: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if hasattr(os, "fchown"):
                # Not root: the file becomes ours, which it already was.
                with contextlib.suppress(OSError):
                    os.fchown(fh.fileno(), st.st_uid, st.st_gid)
            os.chmod(tmp, st.st_mode & 0o7777)
            os.fsync(fh.fileno())
        # The host may have rewritten its config since we read it: do not clobber that.
        if real.read_bytes() != doc.raw:
            raise ConfigError(str(doc.path), "changed while being edited; run again")
        os.replace(tmp, real)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise ConfigError(str(doc.path), f"cannot write: {exc.strerror or exc}") from None
        raise
    try:  # make the rename itself durable (POSIX; Windows has no directory fds)
        dfd = os.open(real.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass
    return backup


def _change(
    path: Path | str,
    host: str | None,
    action: str,
    tether_argv0: str | None,
    dry_run: bool,
) -> ChangeResult:
    doc = _load(Path(path))
    result = ChangeResult(doc.path, host, action, dry_run=dry_run)
    edits: list[tuple[int, int, str]] = []
    argv0_json = json.dumps(tether_argv0, ensure_ascii=False) if tether_argv0 else ""
    for spot in _spots(doc, host, tether_argv0):
        label = spot.entry.label
        if spot.obj is None:
            result.skipped.append((label, spot.problem))
        elif action == "wrap" and spot.entry.wrapped:
            result.skipped.append((label, "already wrapped"))
        elif action == "wrap":
            edits += _wrap_edits(doc, spot, argv0_json)
            result.changed.append(label)
        elif not spot.entry.wrapped:
            result.skipped.append((label, "not wrapped"))
        else:
            edits += _unwrap_edits(doc, spot)
            result.changed.append(label)
    if not edits:
        return result
    new_text = _apply(doc.text, edits)
    result.diff = _diff(doc.path, doc.text, edits, action)
    if not dry_run:
        result.backup = _atomic_write(doc, (doc.bom + new_text).encode("utf-8"))
        result.written = True
    return result


def wrap(
    path: Path | str, host: str | None, tether_argv0: str, *, dry_run: bool = False
) -> ChangeResult:
    """Put `tether_argv0 run --` in front of every stdio entry of one config file.

    `tether_argv0` is the installed `mcp-tether` (made absolute: hosts launch with a
    minimal PATH). Remote and already-wrapped entries are skipped, with the reason.
    """
    return _change(path, host, "wrap", os.path.abspath(tether_argv0), dry_run)


def unwrap(
    path: Path | str, host: str | None, tether_argv0: str | None = None, *, dry_run: bool = False
) -> ChangeResult:
    """Take the guard out again: the exact inverse of `wrap` on the entries it wrapped."""
    argv0 = os.path.abspath(tether_argv0) if tether_argv0 else None
    return _change(path, host, "unwrap", argv0, dry_run)
