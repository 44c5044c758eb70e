"""Just enough JSON-RPC over newline-delimited stdio to drive any MCP server.

Both handshakes are spoken: the 2025-11-25 one (`initialize`, then
`notifications/initialized`) and, when a server refuses `initialize` as an unknown
method, the stateless 2026-07-28 one (`server/discover`, with protocol version and
client capabilities carried in every request's `_meta`, SEP-2575).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from mcp_tether import __version__

if TYPE_CHECKING:
    from typing import Any

__all__ = ["LEGACY_VERSION", "STATELESS_VERSION", "Session", "classify"]

LEGACY_VERSION = "2025-11-25"
STATELESS_VERSION = "2026-07-28"
CLIENT_INFO = {"name": "mcp-tether-probe", "version": __version__}
METHOD_NOT_FOUND = -32601


def classify(line: bytes) -> tuple[str, dict[str, Any] | None]:
    """("response" | "request" | "notification" | "noise", message) for one stdout line."""
    text = line.strip()
    if not text:
        return "blank", None
    try:
        msg = json.loads(text)
    except (ValueError, UnicodeDecodeError):
        return "noise", None
    if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
        return "noise", None
    if "method" in msg:
        return ("request" if "id" in msg else "notification"), msg
    if "id" in msg and ("result" in msg or "error" in msg):
        return "response", msg
    return "noise", None


class Session:
    """Builds the requests of one client session; knows which handshake was used."""

    def __init__(self) -> None:
        self.next_id = 1
        self.stateless = False

    def _meta(self) -> dict[str, Any]:
        return {
            "io.modelcontextprotocol/protocolVersion": STATELESS_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
        }

    def request(self, method: str, params: dict[str, Any] | None = None) -> tuple[int, bytes]:
        rid = self.next_id
        self.next_id += 1
        p: dict[str, Any] = dict(params or {})
        if self.stateless:
            p["_meta"] = {**self._meta(), **p.get("_meta", {})}
        msg: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if p or method != "ping":
            msg["params"] = p
        return rid, (json.dumps(msg, separators=(",", ":")) + "\n").encode()

    def initialize(self) -> tuple[int, bytes]:
        return self.request(
            "initialize",
            {"protocolVersion": LEGACY_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )

    def discover(self) -> tuple[int, bytes]:
        self.stateless = True
        return self.request("server/discover", {})

    @staticmethod
    def notification(method: str) -> bytes:
        return (json.dumps({"jsonrpc": "2.0", "method": method}) + "\n").encode()

    @staticmethod
    def reply(msg: dict[str, Any]) -> bytes:
        """Our answer to a server->client request: ping gets {}, the rest 'not found'."""
        if msg.get("method") == "ping":
            out: dict[str, Any] = {"jsonrpc": "2.0", "id": msg.get("id"), "result": {}}
        elif msg.get("method") == "roots/list":
            out = {"jsonrpc": "2.0", "id": msg.get("id"), "result": {"roots": []}}
        else:
            out = {
                "jsonrpc": "2.0",
                "id": msg.get("id"),
                "error": {"code": METHOD_NOT_FOUND, "message": "not supported by the probe"},
            }
        return (json.dumps(out) + "\n").encode()

    @staticmethod
    def refused_as_unknown(msg: dict[str, Any]) -> bool:
        err = msg.get("error")
        if not isinstance(err, dict):
            return False
        text = str(err.get("message", "")).lower()
        return err.get("code") == METHOD_NOT_FOUND or "not found" in text or "unknown" in text
