"""Reading a config file: safely from disk, into entries and the places to edit them.

Guarantees:
- Only a regular file is read: a FIFO, a device or a folder given as `--config` is a
  one-line `ConfigError`, never a hang; a symlink loop, bad UTF-8, an integer of
  thousands of digits or a malformed document are one-line errors with file:line:col
  where there is one.
- Reading never fails on a remote (HTTP/SSE) or extension-provided entry: those are
  listed with `transport="remote"` and the reason they cannot be wrapped.
- One `Doc` per file whatever its format (JSONC, YAML: span trees; TOML: a tomlkit
  document), with the same list of `Spot`s (entry + where its launch command sits).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mcp_tether.errors import ConfigError
from mcp_tether.hosts import jsonc, toml, yamlspan
from mcp_tether.hosts.base import read_entry
from mcp_tether.hosts.model import Doc, Shape, Spot

__all__ = ["load", "from_bytes", "read_bytes"]


def read_bytes(path: Path) -> tuple[Path, bytes]:
    """(resolved path, contents) of a regular file, or a one-line ConfigError."""
    try:
        real = path.resolve(strict=True)
    except RuntimeError:  # Python < 3.13 reports a symlink loop this way
        raise ConfigError(str(path), "cannot read: symlink loop") from None
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror or exc}") from None
    try:
        # O_NONBLOCK: a FIFO swapped in after the check below still cannot hang us.
        fd = os.open(real, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError(str(path), "not a regular file (a FIFO, device or folder?)")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    return real, b"".join(chunks)


def load(path: Path, fmt: str, shape: Shape, host: str | None) -> Doc:
    """Read and parse one config file and find its server entries."""
    real, raw = read_bytes(path)
    return from_bytes(path, real, raw, fmt, shape, host)


def from_bytes(path: Path, real: Path, raw: bytes, fmt: str, shape: Shape,
               host: str | None) -> Doc:
    """Parse `raw` (the contents of `path`) and find its server entries."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(str(path), f"not UTF-8 (byte {exc.start})") from None
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    text = text[len(bom) :]
    if fmt == "toml":
        doc = Doc(path, real, raw, fmt, bom, text, toml.parse(text, str(path)), shape)
        doc.spots = toml.spots(doc.root, shape, host, path)
        return doc
    root = (yamlspan if fmt == "yaml" else jsonc).parse(text, str(path))
    if root.kind != "object":
        raise ConfigError(str(path), "top level is not an object", line=1, column=1)
    doc = Doc(path, real, raw, fmt, bom, text, root, shape)
    for key_path, node in _tables(root, shape):
        for member in node.members:
            kp = (*key_path, member.key)
            entry, launch, problem = read_entry(host, shape, path, kp, member.value.value)
            doc.spots.append(Spot(entry, launch, problem, member.value))
    return doc


def _tables(root: jsonc.Node, shape: Shape) -> Iterator[tuple[tuple[str, ...], jsonc.Node]]:
    """(key path, object node) of every server table present in the document."""

    def walk(node: jsonc.Node, rest: tuple[str, ...], at: tuple[str, ...]) -> Iterator[Any]:
        if node.kind != "object":
            return
        if not rest:
            yield at, node
            return
        head, tail = rest[0], rest[1:]
        if head == "*":
            for m in node.members:
                yield from walk(m.value, tail, (*at, m.key))
        else:
            member = node.get(head)
            if member is not None:
                yield from walk(member.value, tail, (*at, head))

    for table in shape.tables:
        yield from walk(root, table, ())
