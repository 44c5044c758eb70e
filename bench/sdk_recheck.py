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
            await anyio.to_thread.run_sync(sys.stdin.readline)  # GO
            if mode == "exit":
                os._exit(0)
            print("CLOSING", flush=True)
    print("CLOSED", flush=True)

anyio.run(main)
"""


def _alive(idents: set) -> set:
    snap = snapshot()
    return {i for i in idents if i.pid in snap and snap[i.pid].ident == i
            and not snap[i.pid].exited}


def run_one(argv: list[str], env: dict | None, cwd: str | None, mode: str,
            python: str) -> tuple[str, str]:
    """(verdict, note): exited | survived | error."""
    full_env = dict(os.environ, **(env or {}))
    params = json.dumps({"argv": argv, "env": full_env, "cwd": cwd})
    host = subprocess.Popen([python, "-c", HOST, params, mode], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
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
        return "error", (err.strip().splitlines() or ["no handshake"])[-1][:160]
    tree = {i.ident for i in descendants(host.pid, snapshot())}
    if mode == "crash":
        host.send_signal(signal.SIGKILL)  # our own unreaped child
        t0 = time.monotonic()
    else:
        host.stdin.write("GO\n")
        host.stdin.flush()
        t0 = time.monotonic()
    gone_at = None
    while time.monotonic() - t0 < WINDOW + 3.0:
        reap_children()  # orphans that reparented to us and ended: no zombies
        if not _alive(tree):
            gone_at = time.monotonic() - t0
            break
        time.sleep(0.02)
    host.communicate()
    for ident in _alive(tree):  # leftovers: end them, identity re-checked by the core
        signal_process(ident, signal.SIGKILL)
    if gone_at is not None and gone_at < WINDOW:
        return "exited", f"{gone_at * 1000:.0f} ms"
    return "survived", ("gone after " + f"{gone_at * 1000:.0f} ms" if gone_at
                        else "still alive at window + 3 s")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--list", default="docs/survey.list", help="the survey's list file")
    ap.add_argument("--only", action="append", default=[],
                    help="only entries whose label contains TEXT (repeatable)")
    ap.add_argument("--survey", metavar="JSON",
                    help="the survey's JSON: compare with its python-style verdicts")
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
    return 0


def _run_sdk(args: argparse.Namespace) -> dict[str, dict[str, list[str]]]:
    from mcp_tether.packages import PackageError, prepare
    from mcp_tether.survey import parse_list

    out: dict[str, dict[str, list[str]]] = {}
    for e in parse_list(args.list):
        if args.only and not any(t in e.label for t in args.only):
            continue
        try:
            got = prepare(e.spec, bin=e.bin, launch=e.launch, args=e.args)
        except PackageError as exc:
            print(f"{e.label}: {exc.msg}")
            continue
        for mode in ("close", "exit", "crash"):
            verdict, note = run_one(got.argv, e.env, got.cwd, mode, args.python)
            out.setdefault(e.label, {})[mode] = [verdict, note]
            print(f"{e.label:<58} {mode:<6} sdk host {verdict:<9} ({note})", flush=True)
    return out


def _compare(sdk: dict[str, dict[str, list[str]]], rows: list[dict]) -> None:
    agree = total = 0
    for row in rows:
        theirs = sdk.get(row["label"])
        ours_all = row.get("verdicts", {}).get("python")
        if not theirs or not ours_all:
            continue
        for mode, (verdict, note) in theirs.items():
            ours = ours_all.get(mode)
            if verdict == "error" or ours in (None, "error"):
                print(f"{row['label']:<58} {mode:<6} not compared (probe {ours}, sdk "
                      f"{verdict}: {note})")
                continue
            same = (ours == "exited") == (verdict == "exited")
            total += 1
            agree += same
            print(f"{row['label']:<58} {mode:<6} probe {ours:<11} sdk host {verdict:<9} "
                  f"({note}) {'agree' if same else 'DISAGREE'}")
    print(f"agreement: {agree}/{total} verdicts (pass = the whole tree gone within "
          f"{WINDOW:g} s of the trigger, by itself)")


if __name__ == "__main__":
    sys.exit(main())
