"""Local fixture packages for the package and survey tests: an npm folder and a wheel,
built on the spot (no network, no build backend)."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import zipfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
NODE = bool(shutil.which("node") and shutil.which("npm") and shutil.which("npx"))

# A plain-Node stdio server: answers initialize/ping, exits when stdin ends.
NODE_SERVER = """#!/usr/bin/env node
const rl = require('readline').createInterface({input: process.stdin});
rl.on('line', (line) => {
  let m; try { m = JSON.parse(line); } catch { return; }
  if (m.id === undefined) return;
  const result = m.method === 'initialize' ? {protocolVersion: m.params.protocolVersion,
    capabilities: {}, serverInfo: {name: 'fixture', version: '1.0.0'}} : {};
  process.stdout.write(JSON.stringify({jsonrpc: '2.0', id: m.id, result}) + '\\n');
});
rl.on('close', () => process.exit(0));
"""


def npm_folder(root: Path, name: str, bins: dict[str, str] | str | None) -> Path:
    d = root / name
    d.mkdir()
    meta: dict[str, object] = {"name": name, "version": "1.0.0"}
    if bins is not None:
        meta["bin"] = bins
    (d / "package.json").write_text(json.dumps(meta))
    (d / "server.js").write_text(NODE_SERVER)
    (d / "other.js").write_text(NODE_SERVER)
    return d


def wheel(root: Path, name: str, scripts: list[str], source: str | None = None) -> Path:
    """A wheel whose console scripts run `source` (default: tests/servers/mini.py's stdlib
    server, which takes its flags from the script's argv)."""
    mod, version = name.replace("-", "_"), "1.0.0"
    info = f"{mod}-{version}.dist-info"
    source = source if source is not None else (HERE / "servers" / "mini.py").read_text()
    files = {
        f"{mod}.py": "import sys\nSOURCE = " + repr(source) + "\n\ndef main():\n"
                     "    exec(compile(SOURCE, 'mini', 'exec'), {'__name__': '__main__'})\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    if scripts:
        files[f"{info}/entry_points.txt"] = "[console_scripts]\n" + "".join(
            f"{s} = {mod}:main\n" for s in scripts)
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=")
        record.append(f"{path},sha256={digest.decode()},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    out = root / f"{mod}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
    return out


def go_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private package cache; npm offline with an empty npm cache; pip without any
    index: nothing here reaches a registry. Returns the cache's packages folder."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("MCP_TETHER_CACHE", str(cache))
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("npm_config_offline", "true")
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))
    return cache / "packages"

