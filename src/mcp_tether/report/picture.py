"""What one section of an HTML or Markdown picture shows: a heading and its rows.

`probe`, `lab` and `hostcheck` hand `write_pictures` a list of sections; the renderers
(`html`, `markdown`) read only these keys. Types only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

if TYPE_CHECKING:
    from mcp_tether.probe.record import ScenarioRecord

__all__ = ["Picture", "Section"]


class Picture(TypedDict, total=False):
    results: list[ScenarioRecord]  # one card (HTML) or row (Markdown) each
    summary: str  # the line under the heading (else the guarantees, `diagnose.summary`)
    server_summaries: list[tuple[str, str]]  # the lab: (server, its summary line) each


# (heading, what it shows)
Section = tuple[str, Picture]
