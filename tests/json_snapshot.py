"""Capture what the commands print, normalized, to compare two trees' outputs.

    python tests/json_snapshot.py capture OUT.json [--only NAME...]
    python tests/json_snapshot.py compare BEFORE.json AFTER.json

A change that means to keep every `--json` byte for byte (a refactoring of the records
behind them) captures before and after and compares: `compare` prints each output that
differs as a unified diff, then every object's key list found in one capture only, and
exits 1 if any output differs. Real processes on a loaded machine do not always do the
same (an event more, a scenario rerun alone, a warning that the window was extended):
capture the same tree twice as well, and read a difference the two runs of one tree
also show as that.

What is captured, each from a real run of the command (`python -m mcp_tether`):
- `lab --json` (every block), and `probe --json` on lab servers (Python and Node
  fixtures, a daemonizing one, one behind the guard, one behind `sh -c`), and
  `probe --json --config` (a probed server, a remote one);
- `ps --json`, `ps --format openmetrics` and `reap --dry-run --json` on a fixed set of
  real processes (tests/scan_lab.py's clients: leaked, live, behind a wrapper, on a
  socket, with a leaked writer; a host that abandons a copy): run this in a pid
  namespace of its own, where those are the only processes, e.g.
  `unshare --pid --fork --mount-proc python tests/pidns_init.py python tests/json_snapshot.py ...`;
- `hostcheck --json` on tests/hostcheck_hosts (a bad host, the Python SDK's host, the
  tool-calling stand-in agent), `survey --json --from-json` on the committed table;
- every command's `--help`.

Normalized: what differs from run to run of the same tree (pids, start times, instants,
durations, sizes: every float, the integers under a key that names one, every digit in a
string), so two runs of one tree compare equal; key order, keys, types, words stay.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
ROOT = HERE.parent  # the tree whose commands run: PYTHONPATH=ROOT/src picks it
LAB = ROOT / "src" / "mcp_tether" / "lab"
HOSTS = HERE / "hostcheck_hosts"
PY = sys.executable
CLI = [PY, "-m", "mcp_tether"]
# The fixed folder the processes' scripts and configs live in, so paths compare equal.
WORK = Path(tempfile.gettempdir()) / "mcp-tether-json-snapshot"

COMMANDS = ("lab", "probe", "survey", "run", "wrap", "unwrap", "hosts", "hostcheck",
            "inspect", "ps", "reap")
# Integers under these keys (or keys ending so) differ from run to run.
VOLATILE = re.compile(r"(^|_)(pid|ppid|pids|pgid|sid|host|copy|start|t|at|ms|s|seconds|"
                      r"bytes|rss|cpu|load|age|idle|port|uid|gap|scanned|unreadable|fd|inode|ino|"
                      r"dev|size|jobs|cpus|busy|held|released|waited|tick|time|count|child|old|"
                      r"new|cleanup|others|before|after)($|_)")
# Lists of what happened, in the order it happened: how many of each, and in which order,
# differs from run to run (a loaded machine, two processes' exits in either order). They
# compare as the set of their distinct items, normalized.
EVENTS = {"events", "recorded", "model_events", "signals", "killed_at_window", "survivors",
          "per_agent", "left", "others_left", "members", "children", "threads",
          "thread_waits"}


def normalize(value: Any, key: str = "") -> Any:
    """`value` with what differs between two runs of the same tree replaced by its type."""
    if isinstance(value, dict):
        if key == "per_agent":  # agent -> the pids of its copies
            return {k: normalize(v, "pids") for k, v in value.items()}
        return {k: normalize(v, k) for k, v in value.items()}
    if isinstance(value, list):
        items = [normalize(v, key) for v in value]
        if key in EVENTS:
            items = [json.loads(i) for i in sorted({json.dumps(i) for i in items})]
        return items
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        return "<float>"
    if isinstance(value, int):
        return "<int>" if VOLATILE.search(key) else value
    if isinstance(value, str):
        return "<id>" if key == "id" else _text(value)  # a random call id
    return value


def _text(s: str) -> str:
    s = s.replace(PY, "<python>").replace(sys.prefix, "<venv>")
    s = s.replace(str(WORK), "<work>").replace(str(ROOT), "<root>")
    return re.sub(r"\d+", "N", s)


def _unordered(doc: Any) -> Any:
    """A scan's servers sorted by what they are: its own order (by memory, by pid)
    differs between two runs of the same tree."""
    if isinstance(doc, dict) and isinstance(doc.get("results"), list):
        doc["results"].sort(key=lambda r: json.dumps(r))
    return doc


def _series_unordered(text: str) -> str:
    """OpenMetrics text with each run of one metric's series sorted (per-process series
    come in the scan's order)."""
    out: list[str] = []
    run: list[str] = []
    for line in [*text.splitlines(), ""]:
        name = line.split("{", 1)[0] if not line.startswith("#") else None
        if run and (name is None or name != run[0].split("{", 1)[0]):
            out += sorted(run)
            run = []
        if name is None or not line:
            out.append(line)
        else:
            run.append(line)
    return "\n".join(out)


def _run(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
         timeout: float = 1800, unordered: bool = False) -> dict[str, Any]:
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=timeout)
    out: Any = proc.stdout
    try:
        out = normalize(json.loads(proc.stdout))
        out = _unordered(out) if unordered else out
    except ValueError:
        out = _text(out)
        out = _series_unordered(out) if unordered else out
    return {"argv": [_text(a) for a in argv[3:]], "code": proc.returncode, "stdout": out}


def _probes() -> dict[str, dict[str, Any]]:
    from mcp_tether.lab import node_env

    node_dir = node_env.ensure(quiet=True) if node_env.missing_tools() is None else None

    def fixture(lang: str, name: str) -> list[str]:
        return (["node", str(node_dir / f"{name}.mjs")] if lang == "node" and node_dir
                else [PY, str(LAB / "python" / f"{name}.py")])
    fast = ["--window", "2"]
    runs = {
        "probe python plain": ["--host-style", "python", "--", *fixture("py", "plain")],
        "probe python fixed": ["--host-style", "python", "--", *fixture("py", "fixed")],
        "probe python daemonizer": ["--host-style", "python", "--",
                                    *fixture("py", "daemonizer")],
        "probe python stubborn guarded": ["--host-style", "python", "--", *CLI, "run", "--",
                                          *fixture("py", "stubborn")],
        "probe node timer": ["--", *fixture("node", "timer")],
        "probe node fixed sh -c": ["--", "sh", "-c", " ".join(fixture("node", "fixed"))
                                   + "; true"],
    }
    out = {}
    for name, argv in runs.items():
        if "node" in name and node_dir is None:
            continue
        print(f"json_snapshot: {name}", file=sys.stderr)
        out[name] = _run([*CLI, "probe", "--json", "-q", *fast, *argv])
    cfg = WORK / "probe.json"
    cfg.write_text(json.dumps({"mcpServers": {
        "fixed": {"command": PY, "args": [str(LAB / "python" / "fixed.py")]},
        "remote": {"url": "https://example.invalid/mcp"}}}))
    out["probe --config"] = _run([*CLI, "probe", "--json", "-q", "--yes", "--config",
                                  str(cfg), "--host-style", "python", "-s", "close",
                                  "-s", "crash", *fast])
    return out


def _lab() -> dict[str, dict[str, Any]]:
    print("json_snapshot: lab", file=sys.stderr)
    return {"lab": _run([*CLI, "lab", "--json", "-q"])}


def _machine() -> dict[str, dict[str, Any]]:
    """ps / openmetrics / reap --dry-run on a fixed set of real processes."""
    from scan_lab import MINI, Lab, lab_fixture

    class Patch:  # what lab_fixture asks of pytest's monkeypatch
        def setenv(self, k: str, v: str) -> None:
            os.environ[k] = v

        def chdir(self, p: Path) -> None:
            os.chdir(p)

    tmp = WORK / "machine"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    home, cwd = os.environ.get("HOME"), os.getcwd()
    gen = lab_fixture(tmp, Patch())
    lab: Lab = next(gen)
    try:
        lab.pair([PY, str(lab.fake_server("mcp-server-live.py", sdk_import=True))])
        lab.pair([PY, str(lab.fake_server("mcp-server-leaked.py", sdk_import=True))]).orphan()
        lab.pair([PY, str(lab.fake_server("mcp-server-wrapped.py", sdk_import=True))],
                 wrapper=True).orphan()
        lab.pair([PY, str(lab.fake_server("mcp-server-socket.py", sdk_import=True))],
                 socket=True, new_session=True).orphan()
        lab.pair([PY, str(lab.fake_server("mcp-server-writer.py", sdk_import=True))],
                 leak_writer=True).orphan()
        lab.pair([PY, str(lab.fake_server("plain-script.py"))]).orphan()
        cfg = tmp / "mcp.json"
        cfg.write_text(json.dumps({"mcpServers": {"mini": {"command": PY,
                                                            "args": [str(MINI)]}}}))
        host = lab.popen([PY, str(HOSTS / "threaded_host.py"), "abandon", PY, str(MINI)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert host.stdout is not None
        words = host.stdout.readline().split()
        assert words and words[0] == b"ready", words
        from mcp_tether.proc import identify
        lab.started += [i for i in (identify(int(w)) for w in words[1:]) if i is not None]
        env = dict(os.environ)
        out = {}
        for name, argv in {
            "ps --json": ["ps", "--json", "--config", str(cfg)],
            "ps --format openmetrics": ["ps", "--format", "openmetrics", "--per-process",
                                        "--config", str(cfg)],
            "reap --dry-run --json": ["reap", "--dry-run", "--json", "--config", str(cfg)],
        }.items():
            print(f"json_snapshot: {name}", file=sys.stderr)
            out[name] = _run([*CLI, *argv], env=env, cwd=tmp, unordered=True)
        return out
    finally:
        gen.close()
        os.chdir(cwd)
        if home is not None:
            os.environ["HOME"] = home


def _hostchecks() -> dict[str, dict[str, Any]]:
    agent = [PY, str(HOSTS / "agent_host.py")]
    runs = {
        "hostcheck bad host": ["--settle", "0.5", "-s", "exit", "-s", "sigkill", "--",
                               PY, str(HOSTS / "bad_host.py"), "{server}"],
        "hostcheck python sdk host": ["--settle", "0.5", "-s", "exit", "--",
                                      PY, str(HOSTS / "py_sdk_host.py"), "{server}"],
        "hostcheck agent idle": ["-s", "idle", "--min-age", "1", "--model-api", "anthropic",
                                 "--model-env", "MODEL_URL", "--", *agent, "--api",
                                 "anthropic", "--copies", "shared", "--", "{server}"],
        "hostcheck agent subagents": ["-s", "subagents", "--min-age", "1", "--model-api",
                                      "openai", "--model-env", "MODEL_URL",
                                      "--ready-timeout", "60", "--host-timeout", "20", "--",
                                      *agent, "--api", "openai", "--copies", "per-agent",
                                      "--on-close", "sigterm", "--", "{server}"],
    }
    out = {}
    for name, argv in runs.items():
        print(f"json_snapshot: {name}", file=sys.stderr)
        out[name] = _run([*CLI, "hostcheck", "--json", "-q", *argv])
    out["survey --from-json"] = _run([*CLI, "survey", str(ROOT / "docs" / "survey.list"),
                                      "--json", "--from-json",
                                      str(ROOT / "docs" / "survey-table.json")])
    return out


def _helps() -> dict[str, dict[str, Any]]:
    out = {"--help": _run([*CLI, "--help"])}
    for c in COMMANDS:
        out[f"{c} --help"] = _run([*CLI, c, "--help"])
    return out


PARTS: dict[str, Callable[[], dict[str, dict[str, Any]]]] = {
    "help": _helps, "machine": _machine, "hostcheck": _hostchecks, "probe": _probes,
    "lab": _lab,
}


def capture(path: Path, only: list[str]) -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    got: dict[str, Any] = {}
    for name, part in PARTS.items():
        if not only or name in only:
            got.update(part())
    path.write_text(json.dumps(got, indent=1) + "\n")


def compare(a: Path, b: Path) -> int:
    # normalized again: `normalize` leaves what it made as it is, and a capture made
    # before a rule was added gets it
    before, after = normalize(json.loads(a.read_text())), normalize(json.loads(b.read_text()))
    differ = 0
    for name in dict.fromkeys([*before, *after]):
        x = json.dumps(before.get(name), indent=1).splitlines()
        y = json.dumps(after.get(name), indent=1).splitlines()
        if x != y:
            differ += 1
            print(f"== {name} differs")
            sys.stdout.writelines(line + "\n" for line in difflib.unified_diff(
                x, y, str(a), str(b), lineterm="", n=2))
    print(f"{len(dict.fromkeys([*before, *after])) - differ} same, {differ} differ")
    for name in dict.fromkeys([*before, *after]):  # the keys alone, whatever the values
        x, y = _key_lists(before.get(name)), _key_lists(after.get(name))
        for path, keys in sorted(x - y):
            print(f"== {name}: only in {a}: {path} {list(keys)}")
        for path, keys in sorted(y - x):
            print(f"== {name}: only in {b}: {path} {list(keys)}")
    return 1 if differ else 0


def _key_lists(doc: Any, path: str = "") -> set[tuple[str, tuple[str, ...]]]:
    """Every object's keys, in order, with where it is: what a reader relies on. A key
    in one run only (an event seen, a scenario rerun) shows here as well: tell it from
    a change by comparing two captures of the same tree too."""
    out: set[tuple[str, tuple[str, ...]]] = set()
    if isinstance(doc, dict):
        out.add((path, tuple(doc)))
        for k, v in doc.items():
            out |= _key_lists(v, f"{path}.{k}")
    elif isinstance(doc, list):
        for v in doc:
            out |= _key_lists(v, f"{path}[]")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    c = sub.add_parser("capture")
    c.add_argument("out", type=Path)
    c.add_argument("--only", action="append", choices=list(PARTS), default=[])
    d = sub.add_parser("compare")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    args = ap.parse_args()
    if args.what == "capture":
        capture(args.out, args.only)
        return 0
    return compare(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
