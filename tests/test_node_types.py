"""The Node package's declarations are checked against its code, and compile.

node/ has no build step: its `.d.ts` files are written by hand, and `.d.mts` re-exports
them for the ESM entry (package.json "exports" gives `import` and `require` each their
own types). Two checks keep them from drifting from the code:
- every entry point is loaded as CommonJS and as ESM, and its exports must be exactly
  the names its declaration file gives, each of the declared kind (function, class,
  value); a declared class's methods and getters must be on its prototype, and the
  handle tether() returns must have exactly the members `Tether` declares;
- a consumer importing both entries both ways is compiled with the TypeScript pinned in
  tests/node (installed with the fixtures by node_tether_env, as in CI), with
  `--module nodenext` so that each file is resolved the way Node loads it. Declaration
  files are checked too (no `skipLibCheck`): a broken declaration fails here, and so does
  a consumer the declarations should reject.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import node_tether_env
from mcp_tether.lab import node_env

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(node_env.missing_tools() is not None, reason="needs node and npm"),
]

ESM = """\
import tether, {
  tether as named, isLauncher, findHost, type TetherOptions, type Tether,
} from "mcp-tether";
import Transport, { StdioClientTransport, getDefaultEnvironment } from "mcp-tether/client";
import "mcp-tether/register";

const options: TetherOptions = {
  onShutdown: async (reason) => { reason.toUpperCase(); }, timeoutMs: 500,
};
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

const t: mcpTether.Tether = mcpTether.tether(
  null, { timeoutMs: 500, onShutdown: [() => undefined] });
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
    node = NODE
    for entry in ("index", "client"):
        code = [ln for ln in (node / f"{entry}.d.mts").read_text().splitlines()
                if ln.strip() and not ln.startswith("//")]
        assert f"export * from './{entry}.js';" in code, (entry, code)
        assert len(code) == 3, (entry, code)  # the import, the re-export, the default


# ---- the declarations against the code --------------------------------------------------

NODE = Path(__file__).resolve().parents[1] / "node"
ENTRIES = ("index", "client", "register")
# What a declaration file says: a runtime export's kind, or a member of a class/interface.
_EXPORT = re.compile(r"^export declare (function|class|const) (\w+)\b")
_TYPE_ONLY = re.compile(r"^export (type|interface) \w+\b")
_DEFAULT = re.compile(r"^export default (\w+);$")
_STAR = re.compile(r"^export \* from '\./(\w+)\.js';$")
_BLOCK = re.compile(r"^export (?:declare class|interface) (\w+)\b.*\{$")
_METHOD = re.compile(r"^  (\w+)\(")
_GETTER = re.compile(r"^  get (\w+)\(\)")
_PROPERTY = re.compile(r"^  (?:readonly )?(\w+): ")
_PRIVATE = re.compile(r"^  private (\w+);$")


Declared = tuple[dict[str, str], dict[str, dict[str, str]]]


def declared(text: str, read_other: Callable[[str], Declared] | None = None) -> Declared:
    """`({export: kind}, {class or interface: {member: kind}})` from one declaration file.

    Kinds: function, class, const; members: method, getter, property (optional ones,
    `name?: ...`, are the caller's callbacks and are not read). A line starting `export`
    in a form this reader does not know fails, so a new form cannot slip past the check.
    """
    exports: dict[str, str] = {}
    members: dict[str, dict[str, str]] = {}
    block: str | None = None
    for line in text.splitlines():
        if block is not None:
            if line.startswith("}"):
                block = None
            elif m := _GETTER.match(line):
                members[block][m[1]] = "getter"
            elif (m := _METHOD.match(line)) and m[1] != "constructor":
                members[block][m[1]] = "method"
            elif m := _PROPERTY.match(line):
                members[block][m[1]] = "property"
            elif m := _PRIVATE.match(line):
                members[block][m[1]] = "private"
            continue
        if not line.startswith("export"):
            continue
        if m := _BLOCK.match(line):
            block = m[1]
            members[block] = {}
        if m := _EXPORT.match(line):
            exports[m[2]] = m[1]
        elif m := _DEFAULT.match(line):
            exports["default"] = exports[m[1]]
        elif m := _STAR.match(line):
            assert read_other is not None, line
            other, other_members = read_other(m[1])
            exports.update({k: v for k, v in other.items() if k != "default"})
            members.update(other_members)
        elif not (_TYPE_ONLY.match(line) or line == "export {};"):
            raise AssertionError(f"a declaration form this check does not read: {line!r}")
    return exports, members


def _declarations(entry: str, ext: str) -> Declared:
    def read_other(name: str) -> Declared:
        return _declarations(name, "d.ts")

    return declared((NODE / f"{entry}.{ext}").read_text(), read_other)


# Loads each entry as CommonJS and as ESM and describes what it exports; then calls
# tether() (no host watch, a stdin of its own, no exit) for the handle's members. The
# preload arms on load: it is loaded last, and stdin stays an open pipe meanwhile.
RUNTIME_JS = r"""
const { pathToFileURL } = require('node:url');
const { EventEmitter } = require('node:events');
const kind = (v) => typeof v !== 'function' ? 'const'
  : /^class\b/.test(Function.prototype.toString.call(v)) ? 'class' : 'function';
function members(proto) {
  const out = {};
  for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(proto))) {
    if (name === 'constructor' || name.startsWith('_')) continue; // `_`: internal, as in the SDK
    out[name] = d.get ? 'getter' : typeof d.value === 'function' ? 'method' : 'property';
  }
  return out;
}
function describe(ns) {
  const out = { exports: {}, classes: {} };
  for (const [name, v] of Object.entries(ns)) {
    out.exports[name] = kind(v);
    if (kind(v) === 'class' && name !== 'default') out.classes[name] = members(v.prototype);
  }
  return out;
}
(async () => {
  const dir = process.argv[1];
  const result = { cjs: {}, esm: {} };
  const { tether } = require(`${dir}/index.cjs`);
  const handle = tether({ watchHost: false, signals: [], stdin: new EventEmitter(), exit() {} });
  result.handle = members(handle);
  for (const entry of ENTRIES) {
    result.cjs[entry] = describe(require(`${dir}/${entry}.cjs`));
    result.esm[entry] = describe(await import(pathToFileURL(`${dir}/${entry}.mjs`).href));
  }
  process.stdout.write(JSON.stringify(result));
  process.exit(0);
})();
""".replace("ENTRIES", json.dumps(ENTRIES))


def _runtime() -> dict[str, Any]:
    p = subprocess.Popen(["node", "-e", RUNTIME_JS, str(NODE)], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:  # our own child, not yet reaped: its pid is still its own
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def _same_kind(want: str, got: str) -> bool:
    # A `readonly x: T` member may be a getter: the handle's `host` is one.
    return want == got or (want == "property" and got == "getter")


def mismatches(decl: Declared, found: dict[str, Any], interfaces: dict[str, dict[str, str]]
               ) -> list[str]:
    """What a declaration file and a loaded module disagree on, as sentences."""
    exports, members = decl
    got = found["exports"]
    out = [f"{n}: declared, not exported" for n in exports.keys() - got.keys()]
    out += [f"{n}: exported, not declared" for n in got.keys() - exports.keys()]
    out += [f"{n}: declared {exports[n]}, is {got[n]}" for n in exports.keys() & got.keys()
            if exports[n] != got[n]]
    for name, runtime in [*found["classes"].items(), *interfaces.items()]:
        want = {k: v for k, v in members.get(name, {}).items() if v != "private"}
        private = {k for k, v in members.get(name, {}).items() if v == "private"}
        out += [f"{name}.{m}: declared, not there" for m in want.keys() - runtime.keys()]
        out += [f"{name}.{m}: there, not declared" for m in runtime.keys() - want.keys() - private]
        out += [f"{name}.{m}: declared {want[m]}, is {runtime[m]}"
                for m in want.keys() & runtime.keys() if not _same_kind(want[m], runtime[m])]
    return out


def test_every_entry_exports_exactly_what_its_declarations_say() -> None:
    """CommonJS against the .d.ts, ESM against the .d.mts: names, kinds, class members,
    and the handle tether() returns against `Tether`."""
    runtime = _runtime()
    problems = []
    for mode, js, ext in (("cjs", "cjs", "d.ts"), ("esm", "mjs", "d.mts")):
        for entry in ENTRIES:
            decl = _declarations(entry, ext)
            interfaces = {"Tether": runtime["handle"]} if "Tether" in decl[1] else {}
            problems += [f"{entry}.{js} vs {entry}.{ext}: {p}"
                         for p in mismatches(decl, runtime[mode][entry], interfaces)]
    assert problems == []


def test_the_declarations_check_sees_a_name_kind_or_member_gone_astray() -> None:
    """The check can fail: a declared name missing, an undeclared export, a wrong kind, a
    declared method missing and an undeclared public one are each reported."""
    decl = declared("export declare function a(): void;\nexport declare const b: number;\n"
                    "export declare class C {\n  m(): void;\n  get g(): number;\n}\n")
    found = {"exports": {"b": "function", "C": "class", "extra": "const"},
             "classes": {"C": {"g": "getter", "n": "method"}}}
    assert sorted(mismatches(decl, found, {})) == [
        "C.m: declared, not there", "C.n: there, not declared", "a: declared, not exported",
        "b: declared const, is function", "extra: exported, not declared"]
