"""The Node package's fixture folder: tests/node installed like the lab's Node fixtures.

tests/node holds package.json and package-lock.json pinning both TypeScript SDK lines
(@modelcontextprotocol/sdk 1.x and @modelcontextprotocol/server 2.x); `npm ci` installs
them once into the lab's cache scheme (mcp_tether.lab.node_env), offline-able from npm's
cache. node_modules/mcp-tether is then linked to this checkout's node/ folder, so the
fixtures import the package under test exactly as a user's `import "mcp-tether"` would.
The folder name carries a hash of the checkout's path: two checkouts never share a link.

    python tests/node_tether_env.py     # install now (CI does this before the tests)
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "tests" / "node"
PKG = REPO / "node"


def ensure() -> Path:
    if str(REPO / "src") not in sys.path:
        sys.path.insert(0, str(REPO / "src"))
    from mcp_tether.lab import node_env

    where = hashlib.sha256(str(PKG).encode()).hexdigest()[:8]
    dest = node_env.ensure(quiet=True, src=SRC, name=f"node-tether-fixtures-{where}")
    link = dest / "node_modules" / "mcp-tether"
    if not (link.is_symlink() and os.readlink(link) == str(PKG)):
        tmp = link.with_name(f".mcp-tether-{os.getpid()}")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(PKG)
        os.replace(tmp, link)
    bin_link = dest / "node_modules" / ".bin" / "tether-fixture"
    if not bin_link.is_symlink():
        # `npx tether-fixture ...` runs the fixture the way `npx some-server` runs a package's
        # bin: npm exec -> sh -c -> node. The shebang lives in server-bin.mjs.
        bin_link.parent.mkdir(exist_ok=True)
        bin_link.symlink_to(dest / "server-bin.mjs")
    bin_src = dest / "server-bin.mjs"
    text = "#!/usr/bin/env node\n" + (dest / "server.mjs").read_text()
    if not bin_src.exists() or bin_src.read_text() != text:
        bin_src.write_text(text)
        bin_src.chmod(0o755)
    return dest


if __name__ == "__main__":
    print(ensure())
