"""Moved: the renderers live beside the probe's result type, in `mcp_tether.probe.render`."""

from __future__ import annotations

from mcp_tether.probe.render import *  # noqa: F403  # the old import path keeps working
from mcp_tether.probe.render import __all__  # noqa: F401
