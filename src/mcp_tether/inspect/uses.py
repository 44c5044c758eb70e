"""Which MCP SDK a server loads: one answer, resolved from the server's own entry point.

    from mcp_tether.inspect.uses import uses_for_command
    u = uses_for_command(["node", "dist/index.js"], cwd="/srv/x")
    u.state, u.package, u.version, u.how     # "sdk", "@modelcontextprotocol/server", ...

`probe` (its diagnosis), `inspect` (`--command`) and `ps` (`What.sdk`) all ask this.

Guarantees:
- The command is unwrapped to the program that serves: a guard (`mcp-tether run ... --`),
  `sh -c`, `npx`/`pnpx`/`bunx`/`npm exec`, `uvx`/`uv tool run`, `python [-m]`, `node`,
  a console script or any script with a shebang. Each then goes to the reading of its
  language: `node_imports` (Node's resolution from the entry point) or
  `python_imports` (the interpreter's environment and what the code imports).
- `how` says how the answer was found; `state` is "unknown" when it could not be, never a
  guess. Files are read, never executed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from pathlib import Path

from mcp_tether.guard.argv import parse_guard_argv
from mcp_tether.inspect.model import Uses
from mcp_tether.inspect.node import node_package, read_source
from mcp_tether.inspect.node_imports import NODE_SDKS, bin_of, node_uses
from mcp_tether.inspect.python_imports import PY_SDKS, python_uses

__all__ = ["Uses", "uses_for_command", "node_uses", "python_uses", "NODE_SDKS", "PY_SDKS",
           "npx_package_dirs", "uvx_site_packages", "guarded_command"]


def npx_package_dirs(package: str) -> list[Path]:
    """Where `npx <package>` installed it: the npm cache's `_npx/*/node_modules`."""
    cache = (
        os.environ.get("npm_config_cache")  # noqa: SIM112  # npm's own lower-case name
        or os.path.expanduser("~/.npm")
    )
    name = package.rsplit("@", 1)[0] if package.rfind("@") > 0 else package
    out = []
    for nm in sorted(Path(cache, "_npx").glob("*/node_modules")):
        if (nm / name / "package.json").is_file():
            out.append(nm / name)
    return out


def uvx_site_packages(package: str) -> list[Path]:
    """Where `uvx <package>` installed it: uv's cache environments, newest first."""
    base = os.environ.get("UV_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "uv")
    name = package.split("@", 1)[0].split("==", 1)[0].replace("-", "_").lower()
    hits = Path(base).glob(f"archive-v0/*/lib/python*/site-packages/{name}-*.dist-info")
    sites = {h.parent for h in hits}
    return sorted(sites, key=lambda p: p.stat().st_mtime, reverse=True)


def guarded_command(argv: list[str]) -> list[str] | None:
    """The server behind a guard command line (`mcp-tether run [OPTIONS] -- CMD`, however
    spelled: see `guard.argv`), or None when argv is not one."""
    got = parse_guard_argv(list(argv))
    return None if got is None else got.command


def uses_for_command(argv: list[str], cwd: str | None = None, pid: int | None = None) -> Uses:
    """The SDK the server started by `argv` (in `cwd`; running as `pid`, if it is) loads.
    Never raises on odd commands: "unknown" with the reason."""
    try:
        return _command(list(argv), Path(cwd or os.getcwd()), pid, 0)
    except (OSError, ValueError, RecursionError) as exc:
        return Uses(how=f"could not be read: {exc}")


def _command(argv: list[str], here: Path, pid: int | None, depth: int) -> Uses:
    """What `argv` loads, by its launcher: the guard, a shell, npx, node, uvx, python, or
    an executable's shebang."""
    if not argv or depth > 3:
        return Uses(how="no command")
    base = os.path.basename(argv[0])
    inner = guarded_command(argv)
    if inner is not None:
        return _command(inner, here, None, depth + 1)
    if base in ("sh", "bash", "dash", "zsh") and "-c" in argv[1:]:
        return _shell(argv, here, depth)
    if base in ("npx", "pnpx", "bunx") or argv[:2] in (["npm", "exec"], ["pnpm", "dlx"]):
        return _npx(argv, here)
    if base.startswith("node") or base in ("bun", "tsx"):
        script = next((a for a in argv[1:] if not a.startswith("-")), None)
        if script is None:
            return Uses(language="node", how="no script")
        return node_uses(here / script)
    if base == "uvx" or argv[:3] == ["uv", "tool", "run"]:
        return _uvx(argv, base)
    if base.startswith(("python", "pypy")):
        return _python(argv, here, pid)
    return _shebang(argv, here, pid, depth)


def _shell(argv: list[str], here: Path, depth: int) -> Uses:
    """`sh -c '...'`: the first of its commands that is a server."""
    i = argv.index("-c")
    parts = argv[i + 1].replace("&&", ";").split(";") if i + 1 < len(argv) else []
    got = Uses(how="a shell command with no server in it")
    for part in parts:
        words = [w for w in shlex.split(part) if w != "exec"]
        got = _command(words, here, None, depth + 1)
        if got.state != "unknown":
            return got
    return got


def _npx(argv: list[str], here: Path) -> Uses:
    """`npx PKG` (pnpx, bunx, npm exec, pnpm dlx): the package's bin, where npx runs it."""
    pkgs = [a for a in argv[1:] if not a.startswith("-") and a != "exec"]
    if not pkgs:
        return Uses(language="node", how="no package named")
    name = pkgs[0].rsplit("@", 1)[0] if pkgs[0].rfind("@") > 0 else pkgs[0]
    # npx's own order: a package the project it runs in depends on (node_modules from
    # its working folder up, as `mcp-tether survey` installs its servers) runs in
    # place; only else does npx fetch it into its cache.
    local = node_package(name, here)
    dirs = [local] if local is not None else npx_package_dirs(pkgs[0])
    if not dirs:
        return Uses(language="node", how=f"{pkgs[0]}: not in {here}'s node_modules "
                    "nor in the npx cache")
    entry = bin_of(dirs[-1], name)
    if entry is None:
        return Uses(language="node", how=f"{dirs[-1]}: no bin or main")
    got = node_uses(entry)
    where = "the project's node_modules" if local is not None else "npx cache"
    got.how = f"{where} {dirs[-1]}: " + got.how
    return got


def _uvx(argv: list[str], base: str) -> Uses:
    """`uvx PKG` (`uv tool run`): the module its console script calls, in uv's cache."""
    words = [a for a in (argv[3:] if base == "uv" else argv[1:]) if not a.startswith("-")]
    for site in uvx_site_packages(words[0]) if words else []:
        mod = _console_module(site, words[0])
        if mod:
            return python_uses("", module=mod, sites=[site], env_how=f"uvx environment {site}")
    return Uses(language="python", how="the uvx environment was not found")


def _python(argv: list[str], here: Path, pid: int | None) -> Uses:
    """`python [OPTIONS] (-m MODULE | SCRIPT)`: what the module or script imports."""
    i = 1
    while i < len(argv) and argv[i].startswith("-") and argv[i] not in ("-m", "-c"):
        i += 1 + (argv[i] in ("-W", "-X"))
    if i >= len(argv) or argv[i] == "-c":
        return Uses(language="python", how="code given with -c is not read")
    if argv[i] == "-m" and i + 1 < len(argv):
        return python_uses(argv[0], module=argv[i + 1], pid=pid)
    target = here / argv[i]
    mod = _script_module(target) if target.parent.name == "bin" else None
    if mod:  # a console script run by its interpreter: the module it calls
        return python_uses(argv[0], module=mod, pid=pid)
    return python_uses(argv[0], script=target, pid=pid)


def _shebang(argv: list[str], here: Path, pid: int | None, depth: int) -> Uses:
    """A console script or an executable file: its shebang names the interpreter."""
    exe = shutil.which(argv[0]) or str(here / argv[0])
    try:
        with open(exe, "rb") as f:
            first = f.readline(300)
    except OSError:
        return Uses(how=f"{argv[0]}: not found")
    if not first.startswith(b"#!"):
        return Uses(how=f"{argv[0]}: not a script")
    words = first[2:].decode(errors="replace").split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
    if not words:
        return Uses(how=f"{exe}: empty shebang")
    if "node" in os.path.basename(words[0]):
        return node_uses(Path(os.path.realpath(exe)))
    if os.path.basename(words[0]).startswith("python"):
        mod = _script_module(Path(exe))
        if mod:
            return python_uses(words[0], module=mod, pid=pid)
        return python_uses(words[0], script=Path(exe), pid=pid)
    return _command([words[0], exe, *argv[1:]], here, pid, depth + 1)


def _script_module(exe: Path) -> str | None:
    """The module a pip console script imports (`from pkg.cli import main`)."""
    text = read_source(exe) or ""
    m = re.search(r"^from\s+([\w.]+)\s+import\s+\w+", text, re.M)
    return m.group(1) if m and "sys.exit(" in text else None


def _console_module(site: Path, package: str) -> str | None:
    name = re.split(r"[@=<>~]", package)[0]
    norm = re.sub(r"[-_.]+", "_", name).lower()
    for di in site.glob("*.dist-info"):
        if re.sub(r"[-_.]+", "_", di.name.split("-", 1)[0]).lower() != norm:
            continue
        try:
            text = (di / "entry_points.txt").read_text()
        except OSError:
            continue
        section = text.split("[console_scripts]", 1)[-1].split("\n[", 1)[0]
        pairs = re.findall(r"(?m)^\s*([\w.-]+)\s*=\s*([\w.]+)", section)
        pick = next((m for n, m in pairs if n == name), pairs[0][1] if pairs else None)
        if pick:
            return str(pick)
    return None
