"""The one JSON convention of every `--json`: one document per invocation, an envelope.

    {"schema": "mcp-tether/<shape>", "version": 1, ...summary fields..., "results": [...]}

Guarantees:
- Every command's `--json` prints exactly one JSON document on stdout (so
  `json.loads(stdout)` reads it), an object whose first keys are `schema` (what the
  document is: `mcp-tether/probe`, `mcp-tether/ps`, ...; docs/json.md lists them) and
  `version` (this module's `VERSION`, raised when a field is removed or changes meaning;
  adding a field does not raise it), then the command's summary fields, and last
  `results`: the list of what the command reports on (scenarios, servers, files ...).
- Diagnostics never go to stdout with it: they are on stderr.

`read_object(path)` reads back the JSON files the package keeps or meets (cache markers,
package.json): the object, or None for a missing, unreadable or non-object file.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import IO, Any

__all__ = ["VERSION", "envelope", "print_json", "read_object"]

VERSION = 1


def envelope(shape: str, results: list[Any], **summary: Any) -> dict[str, Any]:
    """The document for `shape` (`probe`, `ps` ...): schema, version, summary, results."""
    if "results" in summary or "schema" in summary or "version" in summary:
        raise ValueError("schema, version and results are the envelope's own keys")
    return {"schema": f"mcp-tether/{shape}", "version": VERSION, **summary,
            "results": results}


def print_json(shape: str, results: list[Any], out: IO[str] | None = None,
               **summary: Any) -> None:
    """Print the envelope as one indented document and a newline."""
    out = out or sys.stdout
    out.write(json.dumps(envelope(shape, results, **summary), indent=2) + "\n")


def read_object(path: Path) -> dict[str, Any] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None
