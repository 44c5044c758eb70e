"""The host configs' matchers, remembered between scans and reused only when provably current.

Why: every `ps` and every `reap --watch` round needs the stdio entries of every host config
on the machine. Finding them costs the `hosts` package (with pathlib, re and enum: about
30 of the 65 ms a plain `ps` took here), and reading them costs a JSONC parse of files that
can be megabytes (`~/.claude.json` keeps every project's history).

Guarantees (git's index is the model: a stat signature per input, racy entries not trusted):
- What discovery looked at is recorded while it runs: every environment variable it read
  (value or absent), every file it considered (existing or not), every folder whose
  listing chose files (`Machine.listed`), and the source file of every mcp_tether module
  loaded (the code is an input too: a new host module changes the answer, whatever the
  version says). Each path gets a signature: its `stat()` (type, inode, device, size,
  mtime and ctime in ns), or "absent", or the error.
- The index is reused only if the key (format, version, platform, home, working
  directory, uid) is the same, every recorded variable has the same value, and every
  recorded path has the same signature. Anything else, or anything unreadable or of
  another shape: discovery runs again.
- Racy inputs are not remembered: if a path looked at changed less than `RACY_NS` before
  the index would be written, nothing is written (a change within the file system's
  timestamp granularity, with the same size, could otherwise go unseen).
- Only the real machine's discovery is remembered (`scan(home=..., cwd=...)` is not); a
  `--config FILE` is read afresh every time beside it. The file lives in
  `$XDG_CACHE_HOME/mcp-tether/` (else `~/.cache/mcp-tether/`), mode 0600 in a 0700
  folder (it holds the servers' commands and arguments), written by an atomic rename;
  one that is not ours or is writable by others is ignored.
- Never an error: an index that cannot be read or written is simply not used.
"""

from __future__ import annotations

import marshal
import os
import sys
import time
from typing import TYPE_CHECKING

from mcp_tether import __version__

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["cached", "RACY_NS", "index_path"]

FORMAT = 1
RACY_NS = 2_000_000_000  # 2 s: well above any file system's timestamp granularity


def index_path() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "mcp-tether", f"ps-configs-py{sys.version_info[0]}"
                                            f"{sys.version_info[1]}.marshal")


def _sig(path: str) -> tuple[int, ...] | str:
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return "absent"
    except OSError as exc:
        return f"error {exc.errno}"
    return (st.st_mode, st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _key() -> tuple[object, ...]:
    uid = os.getuid() if hasattr(os, "getuid") else -1
    return (FORMAT, __version__, sys.platform, os.path.expanduser("~"), os.getcwd(), uid)


def _load(path: str, key: tuple[object, ...]) -> Any:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        uid = os.getuid() if hasattr(os, "getuid") else st.st_uid
        if st.st_uid != uid or st.st_mode & 0o022:  # not ours, or others may write it
            return None
        data = os.read(fd, 1 << 24)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        doc = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return None
    if not isinstance(doc, dict) or doc.get("key") != key:
        return None
    return doc


def _current(doc: Any) -> bool:
    try:
        env = doc["env"]
        paths = doc["paths"]
        if any(os.environ.get(name) != value for name, value in env.items()):
            return False
        return all(_sig(p) == sig for p, sig in paths.items())
    except (KeyError, TypeError, AttributeError):
        return False


def _store(path: str, doc: dict[str, Any]) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, marshal.dumps(doc))
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except (OSError, ValueError):
        import contextlib  # the rare path only

        with contextlib.suppress(OSError):
            os.unlink(tmp)


class Observed:
    """What one discovery looked at: fill `env` (a recording mapping) and `listed` through
    the machine, add every considered file with `consider`."""

    def __init__(self) -> None:
        self.env = _RecordingEnv(os.environ)
        self.listed: list[Any] = []
        self.files: list[str] = []

    def consider(self, path: object) -> None:
        self.files.append(str(path))

    def signatures(self) -> dict[str, tuple[int, ...] | str]:
        return {p: _sig(p) for p in [*self.files, *map(str, self.listed), *_our_code()]}


def _our_code() -> list[str]:
    """The source files of every mcp_tether module loaded: the code that made the answer
    is an input too (a new host module, a changed matcher), whatever the version says."""
    out = []
    for name, mod in list(sys.modules.items()):
        if name == "mcp_tether" or name.startswith("mcp_tether."):
            path = getattr(mod, "__file__", None)
            if path:
                out.append(path)
    return out


class _RecordingEnv(dict):  # type: ignore[type-arg]  # str -> str, reads recorded
    def __init__(self, source: Any) -> None:
        super().__init__(source)
        self.read: dict[str, str | None] = {}

    def get(self, name: Any, default: Any = None) -> Any:
        self.read[name] = dict.get(self, name)
        return dict.get(self, name, default)

    def __getitem__(self, name: Any) -> Any:
        self.read[name] = dict.get(self, name)
        return dict.__getitem__(self, name)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self.read[name] = dict.get(self, name)
        return dict.__contains__(self, name)


def cached(compute: Callable[[Observed], tuple[list[tuple[Any, ...]], list[str]]],
           arity: int) -> tuple[list[tuple[Any, ...]], list[str]]:
    """(matcher fields, errors): from the index when it is provably current, else from
    `compute(observed)`, which runs discovery through `observed` and returns the same
    (`arity` fields per matcher: a remembered answer of another shape is not used)."""
    try:
        path, key = index_path(), _key()
    except OSError:  # no working directory (removed under us): discovery says why
        return compute(Observed())
    doc = _load(path, key)
    if doc is not None and _current(doc):
        matchers, errors = doc.get("matchers"), doc.get("errors")
        if isinstance(matchers, list) and isinstance(errors, list) \
                and all(isinstance(m, list) and len(m) == arity for m in matchers):
            return [tuple(m) for m in matchers], [str(e) for e in errors]
    seen = Observed()
    before = time.time_ns()
    matchers, errors = compute(seen)
    sigs = seen.signatures()
    fresh = any(isinstance(s, tuple) and max(s[4], s[5]) > before - RACY_NS
                for s in sigs.values())
    if not fresh:
        _store(path, {"key": key, "env": seen.env.read, "paths": sigs,
                      "matchers": [list(m) for m in matchers], "errors": list(errors)})
    return matchers, errors
