"""The Node package's declarations compile under `tsc --strict`, as ESM and as CommonJS.

node/ has no build step: its `.d.ts` files are written by hand, and `.d.mts` re-exports
them for the ESM entry (package.json "exports" gives `import` and `require` each their
own types). A consumer importing both entries both ways is compiled with the TypeScript
pinned in tests/node (installed with the fixtures by node_tether_env, as in CI), with
`--module nodenext` so that each file is resolved the way Node loads it. Declaration
files are checked too (no `skipLibCheck`): a broken declaration fails here, and so does
a consumer the declarations should reject.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import node_tether_env
from mcp_tether.lab import node_env

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(node_env.missing_tools() is not None, reason="needs node and npm"),
]

ESM = """\
import tether, { tether as named, isLauncher, findHost, type TetherOptions, type Tether } from "mcp-tether";
import Transport, { StdioClientTransport, getDefaultEnvironment } from "mcp-tether/client";
import "mcp-tether/register";

const options: TetherOptions = { onShutdown: async (reason) => { reason.toUpperCase(); }, timeoutMs: 500 };
const t: Tether = tether(null, options);
const u: Tether = named({ watchHost: false });
const launcher: boolean = isLauncher(["npx", "-y", "server"]);
const pid: number | undefined = findHost().host?.pid;
const same: typeof StdioClientTransport = Transport;
const env: Record<string, string> = getDefaultEnvironment();
const preloaded: boolean = t.preloaded;
void [t.shutdown("manual", 0), u.host, launcher, pid, same, env, preloaded];
"""

CJS = """\
import mcpTether = require("mcp-tether");
import client = require("mcp-tether/client");
import register = require("mcp-tether/register");
import { tether } from "mcp-tether";

const t: mcpTether.Tether = mcpTether.tether(null, { timeoutMs: 500, onShutdown: [() => undefined] });
const d: typeof tether = mcpTether.default;
const transport = new client.StdioClientTransport({ command: "node", args: ["server.js"] });
const rest: string = register.withoutPreload("--import=mcp-tether/register --inspect");
void [t.shutdown(), d, transport.close(), rest];
"""


def _tsc(tmp_path: Path, files: dict[str, str]) -> subprocess.CompletedProcess[str]:
    fx = node_tether_env.ensure()
    tsc = fx / "node_modules" / ".bin" / "tsc"
    assert tsc.exists(), f"{tsc}: typescript is not installed from tests/node/package.json"
    (tmp_path / "node_modules").symlink_to(fx / "node_modules")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return subprocess.run(
        [str(tsc), "--strict", "--noEmit", "--module", "nodenext", "--moduleResolution",
         "nodenext", "--types", "node", *files],
        cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300)


def test_the_declarations_compile_for_esm_and_commonjs_consumers(tmp_path: Path) -> None:
    out = _tsc(tmp_path, {"esm.mts": ESM, "cjs.cts": CJS})
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_consumer_the_declarations_reject_fails_the_check(tmp_path: Path) -> None:
    """The check can fail: a wrong option type is a compile error, in both module kinds."""
    bad = 'import { tether } from "mcp-tether";\ntether(null, { timeoutMs: "1s" });\n'
    out = _tsc(tmp_path, {"bad.mts": bad, "bad.cts": bad})
    assert out.returncode != 0
    assert out.stdout.count("error TS2322") == 2, out.stdout + out.stderr


def test_the_esm_declarations_are_the_commonjs_ones_re_exported() -> None:
    """One declaration file per entry point is written by hand; the .d.mts only re-exports."""
    node = Path(__file__).resolve().parents[1] / "node"
    for entry in ("index", "client"):
        code = [ln for ln in (node / f"{entry}.d.mts").read_text().splitlines()
                if ln.strip() and not ln.startswith("//")]
        assert f"export * from './{entry}.js';" in code, (entry, code)
        assert len(code) == 3, (entry, code)  # the import, the re-export, the default
