"""Re-check the survey's close/exit/crash verdicts with an independent host: the official
MCP Python SDK's own `stdio_client` (not our probe's client).

    python bench/sdk_recheck.py --only server-memory --only mcp-server-time \
        --save /tmp/sdk.json --survey docs/survey-table.json

For each surveyed server (a row of the survey's JSON that ran) and each of close, exit
and crash, a host process runs `stdio_client` + `ClientSession.initialize()` on the row's
exact command line, then:
  close  leaves the `async with` blocks (the SDK closes stdin, waits its 2 s
         PROCESS_TERMINATION_TIMEOUT, then ends the process group itself);
  exit   calls os._exit(0) while connected (the OS closes its pipes);
  crash  is SIGKILLed by this script while connected.
This script watches the server's whole process tree (every descendant of the host,
identities taken after the handshake) and calls the scenario passed when the whole tree
was gone within 2 s of the trigger, before any signal from the SDK (for close: before
its 2 s termination). It then compares with the survey's python-host-style verdicts
(pass = verdict `exited`) and prints the agreement. Runs in a pid namespace of its own
(bench/_pidns.py): nothing can outlive it. Leftovers of a scenario are SIGKILLed by
identity before the next.

`--mode sigterm` (python host) re-checks the python host style's `sigterm`: while
connected, the host calls the SDK's own `mcp.os.posix.utilities.
terminate_posix_process_tree` on its server (killpg SIGTERM, 2 s, killpg SIGKILL); pass
when the tree is gone before that SIGKILL. `--probe` runs our probe on the same command
in the same run (`--host-style python -s MODE`) and compares with it, not with a survey
made under another load.

`--failing SURVEY_JSON` re-checks exactly the python host style's failures of a survey:
each failing row's failed close/exit/crash/sigterm, and says of every failure whether the
SDK host confirms it; failures of scenarios no SDK host performs (devnull, idle,
half-close, sigint, inherited-writer) are listed as not re-checkable.

`--annotate` (with `--failing`) writes each answer into that survey JSON, beside the
failure it is about (`sdk_recheck`): the survey's table then shows a failure the SDK host
did not confirm as such, next to its verdict; the level stays judged on what repeated.

`--host ts` drives the server with the TypeScript SDK's `Client` + `StdioClientTransport`
(the lab's pinned Node fixtures): close is `client.close()` (end stdin, 2 s, SIGTERM to
the child, 2 s, SIGKILL), exit is `process.exit(0)`, crash a SIGKILL. Every run also
says whether anything of the tree was LEFT 3 s after the host was gone (the servers x
hosts question); `--join docs/survey-hosts.json` compares that with the derived table
(close: the host exits; crash: the host crashes).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _pidns  # noqa: E402  # bench's sibling module

from mcp_tether import platform  # noqa: E402
from mcp_tether.proc import descendants, snapshot  # noqa: E402
from mcp_tether.proc.reap import reap_children  # noqa: E402
from mcp_tether.proc.signals import signal_process  # noqa: E402

WINDOW = 2.0  # the probe's window and the SDK's PROCESS_TERMINATION_TIMEOUT
READY = 120.0  # npx start-ups on a loaded 2-core machine took over 60 s

HOST = r"""
import anyio, json, os, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

params = json.loads(sys.argv[1])
mode = sys.argv[2]

async def main():
    server = StdioServerParameters(command=params["argv"][0], args=params["argv"][1:],
                                   env=params.get("env"), cwd=params.get("cwd"))
    async with stdio_client(server, errlog=open(os.devnull, "w")) as (r, w):
        async with ClientSession(r, w) as session:
            await session.initialize()
            print("READY", flush=True)
            go = await anyio.to_thread.run_sync(sys.stdin.readline)  # GO [SERVER-PID]
            if mode == "exit":
                os._exit(0)
            if mode == "sigterm":
                # The SDK's own group kill, on the server it spawned (its pid is the
                # group's id: start_new_session=True), while the session is open.
                from mcp.os.posix.utilities import terminate_posix_process_tree

                class Spawned:  # what terminate_posix_process_tree reads of a Process
                    pid = int(go.split()[1])
                    returncode = None

                await terminate_posix_process_tree(Spawned(), 2.0)
            print("CLOSING", flush=True)
    print("CLOSED", flush=True)

anyio.run(main)
"""

TS_HOST = r"""
const [dir, raw, mode] = process.argv.slice(1);  // node -e: no script path
const params = JSON.parse(raw);
const sdk = dir + "/node_modules/@modelcontextprotocol/sdk/dist/cjs/client/";
const { Client } = require(sdk + "index.js");
const { StdioClientTransport } = require(sdk + "stdio.js");
(async () => {
  const transport = new StdioClientTransport({ command: params.argv[0],
    args: params.argv.slice(1), env: params.env, cwd: params.cwd || undefined,
    stderr: "ignore" });
  const client = new Client({ name: "sdk-recheck", version: "0" });
  await client.connect(transport);
  console.log("READY");
  process.stdin.once("data", async () => {
    if (mode === "exit") process.exit(0);
    console.log("CLOSING");
    await client.close();
    console.log("CLOSED");
    process.exit(0);
  });
})().catch((e) => { console.error(String(e)); process.exit(1); });
"""
SETTLE = 3.0  # after the host is gone: is anything of the tree still running?


def _alive(idents: set) -> set:
    snap = snapshot()
    return {i for i in idents if i.pid in snap and snap[i.pid].ident == i
            and not snap[i.pid].exited}


def run_one(argv: list[str], env: dict | None, cwd: str | None, mode: str,
            python: str, host_kind: str = "python",
            node_dir: str = "") -> tuple[str, str, bool | None]:
    """(verdict, note, left): exited | survived | error; left: anything of the tree
    still running SETTLE s after the host was gone (None: could not run)."""
    full_env = dict(os.environ, **(env or {}))
    params = json.dumps({"argv": argv, "env": full_env, "cwd": cwd})
    cmd = ([python, "-c", HOST, params, mode] if host_kind == "python"
           else ["node", "-e", TS_HOST, "--", node_dir, params, mode])
    host = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert host.stdout is not None and host.stdin is not None
    deadline = time.monotonic() + READY
    line = ""
    import select

    while time.monotonic() < deadline:
        ready, _, _ = select.select([host.stdout], [], [], 0.5)
        if ready:
            line = host.stdout.readline()
            break
    if line.strip() != "READY":
        host.kill()
        _, err = host.communicate()
        return "error", (err.strip().splitlines() or ["no handshake"])[-1][:160], None
    snap = snapshot()
    tree = {i.ident for i in descendants(host.pid, snap)}
    child = next((i for i in tree if snap[i.pid].ppid == host.pid), None)
    if not _alive(tree):  # it ended after the handshake, before any trigger: no verdict
        host.kill()
        host.communicate()
        return "error", "the server's tree was gone before the trigger", None
    if mode == "sigterm" and child is None:
        host.kill()
        host.communicate()
        return "error", "no direct child found", None
    if mode == "crash":
        host.send_signal(signal.SIGKILL)  # our own unreaped child
        t0 = time.monotonic()
    else:
        host.stdin.write(f"GO {child.pid if child else 0}\n")
        host.stdin.flush()
        t0 = time.monotonic()
    gone_at = _watch(tree, t0, WINDOW + 3.0)
    host.communicate()
    # The servers x hosts question: once the host is gone, is anything of it left?
    left = gone_at is None and _watch(tree, time.monotonic(), SETTLE) is None
    for ident in _alive(tree):  # leftovers: end them, identity re-checked by the core
        signal_process(ident, signal.SIGKILL)
    if gone_at is not None and gone_at < WINDOW:
        return "exited", f"{gone_at * 1000:.0f} ms", left
    return "survived", ("gone after " + f"{gone_at * 1000:.0f} ms" if gone_at
                        else "still alive at window + 3 s"), left


def _watch(tree: set, t0: float, limit: float) -> float | None:
    """Seconds after t0 when the whole tree was gone; None: not within `limit`."""
    while time.monotonic() - t0 < limit:
        reap_children()  # orphans that reparented to us and ended: no zombies
        if not _alive(tree):
            return time.monotonic() - t0
        time.sleep(0.02)
    return None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", default="docs/survey.list", help="the survey's list file")
    ap.add_argument("--only", action="append", default=[],
                    help="only entries whose label contains TEXT (repeatable)")
    ap.add_argument("--mode", action="append", choices=("close", "exit", "crash", "sigterm"),
                    help="the scenarios to re-check (repeatable; default close, exit, crash)")
    ap.add_argument("--host", choices=("python", "ts"), default="python",
                    help="the SDK client that hosts the server (default: python)")
    ap.add_argument("--probe", action="store_true",
                    help="also run our probe (python host style) in the same run; compare")
    ap.add_argument("--survey", metavar="JSON",
                    help="the survey's JSON: compare with its python-style verdicts")
    ap.add_argument("--join", metavar="JSON",
                    help="servers x hosts JSON (python -m mcp_tether.survey.hosts): "
                    "compare its derived LEFT/gone with what the real host left")
    ap.add_argument("--failing", metavar="SURVEY_JSON",
                    help="re-check only the python host style's failures of that survey "
                    "(each failing row, its failed close/exit/crash/sigterm) and say of "
                    "each failure whether the SDK host confirms it")
    ap.add_argument("--annotate", action="store_true",
                    help="with --failing: write each answer into that JSON, beside its failure")
    ap.add_argument("--save", metavar="JSON", help="write the SDK host's verdicts here")
    ap.add_argument("--load", metavar="JSON", help="compare verdicts saved by --save")
    ap.add_argument("--python", default=sys.executable,
                    help="an interpreter with the `mcp` SDK (default: this one)")
    ap.add_argument("--host-namespace", action="store_true")
    args = ap.parse_args()
    if args.load:
        sdk_verdicts = json.loads(Path(args.load).read_text())
    else:
        _pidns.enter(allow_host=args.host_namespace)
        platform.set_subreaper()  # orphans of a killed host reparent to us, to be seen
        sdk_verdicts = _run_sdk(args)
        if args.save:
            Path(args.save).write_text(json.dumps(sdk_verdicts, indent=1) + "\n")
    if args.survey:
        doc = json.loads(Path(args.survey).read_text())
        _compare(sdk_verdicts, doc["results"] if "results" in doc else doc["rows"])
    if args.failing:
        states = _confirm(sdk_verdicts, _rows(args.failing))
        if args.annotate:
            _annotate(Path(args.failing), states)
    if args.probe:
        _compare(sdk_verdicts, [{"label": k, "verdicts": {"python": v.get("probe", {})}}
                                for k, v in sdk_verdicts.items()])
    if args.join:
        _compare_join(sdk_verdicts, json.loads(Path(args.join).read_text()), args.host)
    return 0


def _run_sdk(args: argparse.Namespace) -> dict[str, dict]:
    from mcp_tether.lab.node_env import ensure
    from mcp_tether.packages import PackageError, prepare
    from mcp_tether.survey import parse_list

    node_dir = str(ensure(quiet=True)) if args.host == "ts" else ""
    modes = args.mode or ["close", "exit", "crash"]
    failing = _python_failures(_rows(args.failing)) if args.failing else None
    out: dict[str, dict] = {}
    for e in parse_list(args.list):
        if args.only and not any(t in e.label for t in args.only):
            continue
        if failing is not None:
            modes = [m for m in RECHECKABLE if m in failing.get(e.label, ())]
            if not modes:
                continue
        try:
            got = prepare(e.spec, bin=e.bin, launch=e.launch, args=e.args)
        except PackageError as exc:
            print(f"{e.label}: {exc.msg}")
            continue
        row = out.setdefault(e.label, {})
        for mode in modes:
            verdict, note, left = run_one(got.argv, e.env, got.cwd, mode, args.python,
                                          args.host, node_dir)
            row[mode] = [verdict, note, left]
            print(f"{e.label:<58} {mode:<7} {args.host} sdk host {verdict:<9} ({note})"
                  f"{' LEFT' if left else ''}", flush=True)
        if args.probe:
            row["probe"] = _probe(got.argv, e, got.cwd, modes)
            print(f"{e.label:<58} probe (python style): {row['probe']}", flush=True)
    return out


def _probe(argv: list[str], e: object, cwd: str | None, modes: list[str]) -> dict[str, str]:
    """Our probe, python host style, on the same command in the same run."""
    cmd = [sys.executable, "-m", "mcp_tether", "probe", "--json", "--level", "robust",
           "--host-style", "python", "--ready-timeout", "120"]
    for k, v in getattr(e, "env", {}).items():
        cmd += ["--env", f"{k}={v}"]
    for m in modes:
        cmd += ["-s", m]
    p = subprocess.run(cmd + ["--", *argv], capture_output=True, text=True, cwd=cwd)
    try:
        results = json.loads(p.stdout)["results"]
    except (ValueError, KeyError):
        return {m: "error" for m in modes}
    return {r["scenario"]: r["verdict"] for r in results}


def _compare(sdk: dict[str, dict], rows: list[dict]) -> None:
    agree = total = 0
    for row in rows:
        theirs = sdk.get(row["label"])
        ours_all = row.get("verdicts", {}).get("python")
        if not theirs or not ours_all:
            continue
        for mode, got in theirs.items():
            if mode == "probe":
                continue
            verdict, note = got[0], got[1]
            ours = ours_all.get(mode)
            if verdict == "error" or ours in (None, "error"):
                print(f"{row['label']:<58} {mode:<7} not compared (probe {ours}, sdk "
                      f"{verdict}: {note})")
                continue
            same = (ours == "exited") == (verdict == "exited")
            total += 1
            agree += same
            print(f"{row['label']:<58} {mode:<7} probe {ours:<11} sdk host {verdict:<9} "
                  f"({note}) {'agree' if same else 'DISAGREE'}")
    print(f"agreement: {agree}/{total} verdicts (pass = the whole tree gone within "
          f"{WINDOW:g} s of the trigger, by itself)")


# The python host style's scenarios that a Python SDK host can do to a server itself.
# The others (devnull, idle, half-close, sigint, inherited-writer, ...) are nothing
# `stdio_client` does: their failures are the probe's alone, said so per failure.
RECHECKABLE = ("close", "exit", "crash", "sigterm")


def _rows(path: str) -> list[dict]:
    doc = json.loads(Path(path).read_text())
    return doc["results"] if "results" in doc else doc["rows"]


def _python_failures(rows: list[dict]) -> dict[str, list[str]]:
    return {r["label"]: [f["scenario"] for f in r.get("failures") or []
                         if f["style"] == "python"] for r in rows}


def _confirm(sdk: dict[str, dict], rows: list[dict]) -> dict[tuple[str, str], str]:
    """Each failure of the python host style: confirmed by the SDK host (it too saw the
    tree outlive the trigger's 2 s), not confirmed (the SDK host saw it gone), not
    compared (the SDK host could not run it), or not re-checkable (no SDK host action)."""
    counts: dict[str, int] = {}
    states: dict[tuple[str, str], str] = {}
    for label, scenarios in _python_failures(rows).items():
        for scenario in scenarios:
            got = sdk.get(label, {}).get(scenario)
            if scenario not in RECHECKABLE:
                state = "not re-checkable (no Python SDK host does this)"
            elif not got or got[0] == "error":
                state = f"not compared ({got[1] if got else 'not run'})"
            elif got[0] == "exited":
                state = f"NOT CONFIRMED: the SDK host saw the tree gone ({got[1]})"
            else:
                state = f"confirmed ({got[1]})"
            key = state.split(" (")[0].split(":")[0]
            counts[key] = counts.get(key, 0) + 1
            states[(label, scenario)] = state
            print(f"{label:<58} {scenario:<16} {state}")
    print("python-style failures: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return states


def _annotate(path: Path, states: dict[tuple[str, str], str]) -> None:
    """Each python-style failure's answer into the survey JSON (`sdk_recheck`), in place."""
    doc = json.loads(path.read_text())
    for row in doc["results"] if "results" in doc else doc["rows"]:
        for f in row.get("failures") or []:
            state = states.get((row["label"], f["scenario"]))
            if f["style"] == "python" and state and not state.startswith("not "):
                f["sdk_recheck"] = state.replace("NOT CONFIRMED", "not confirmed")
    path.write_text(json.dumps(doc, indent=1) + "\n")


# sdk_recheck's modes as the hosts' events of the servers x hosts table.
_EVENT = {"close": "exit", "crash": "sigkill"}
_JOIN_HOST = {"python": "python sdk", "ts": "typescript sdk"}


def _compare_join(sdk: dict[str, dict], join: dict, host: str) -> None:
    """The derived servers x hosts cell against what the real host left."""
    name = next((h["name"] for h in join["hosts"]
                 if h["name"].replace("`", "").lower().startswith(_JOIN_HOST[host])), None)
    agree = total = 0
    for row in join["rows"]:
        theirs = sdk.get(row["label"])
        if not theirs or name is None:
            continue
        for mode, event in _EVENT.items():
            got = theirs.get(mode)
            cell = row["cells"].get(name, {}).get(event)
            if (not got or len(got) < 3 or got[2] is None or not cell
                    or cell["state"] not in ("left", "gone", "late")):
                continue
            derived_left = cell["state"] == "left"
            same = derived_left == got[2]
            total += 1
            agree += same
            print(f"{row['label']:<58} host {event:<7} derived {cell['state']:<5} real "
                  f"{'LEFT' if got[2] else 'gone'} {'agree' if same else 'DISAGREE'}")
    print(f"servers x hosts ({name}): {agree}/{total} pairs agree")


if __name__ == "__main__":
    sys.exit(main())
