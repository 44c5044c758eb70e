"""Never a live client's copy: hosts with one copy per client, and the samples file.

A host that runs a copy per client (Codex's agents, a gateway's connections) uses a
newer copy while another client of its own sits idle with an older one; copies that
differ in a variable the host set are different servers; a samples file that
contradicts the kernel (forged, another boot's, not ours alone) is no evidence. Each
scene runs `reap --watch --include superseded` at a short `--min-age` while the newest
copy is called, ends nothing, and every copy answers afterwards. Each also shows the
scene is one the rule would otherwise call superseded (the evidence that protects it
taken away, on `ps` or a dry run only), so none of these tests could pass by a rule
that sees nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.proc import ProcessId, identify, is_running, table
from mcp_tether.scan import habits, samples
from mcp_tether.scan.samples import FORMAT, Samples, default_path
from polling import until
from scan_lab import (
    DEADLINE,
    HOSTS,
    GatewayClient,
    Host,
    Lab,
    codex_standin,
    entry,
    host_line,
    kids,
    mini_config,
    needs_proc,
    ps_json,
    run_cli,
    watch_while,
)

pytestmark = [pytest.mark.linux, needs_proc,
              pytest.mark.requires_linux_backend("read/write counters and sockets of other "
                                                 "processes are unknown without /proc")]
ROUNDS = 14  # of 0.5 s at least: 7 s, over three times the watch's --min-age of 2 s
EVERY = 1.5  # seconds between the busy client's calls: its copy is quiet between looks


def _state(capsys: pytest.CaptureFixture[str], cfg: str, pid: int) -> dict[str, Any]:
    e = entry(ps_json(capsys, "--config", cfg), pid)
    assert e is not None, pid
    return e


def _superseded_once_used(capsys: pytest.CaptureFixture[str], cfg: str, old: int,
                          use: Any) -> dict[str, Any]:
    """Looks with the newest copy called between them, until `old` is superseded."""
    def look() -> dict[str, Any] | None:
        use()
        e = _state(capsys, cfg, old)
        return e if e["state"] == "superseded" else None
    return until(look, f"copy {old} superseded", DEADLINE * 2, max_step=0.3)


def _no_end(lines: list[str]) -> None:
    assert not [line for line in lines if not line.startswith("left")], lines


def _protected(e: dict[str, Any], source: str) -> None:
    sup = e["superseded"]
    assert e["state"] != "superseded" and sup["answer"] == "unknown", e
    assert sup["missing"] == "host-habit" and sup["habit"]["source"] == source, sup
    assert sup["habit"]["kind"] == "per-client", sup


# ----- 1. hosts with a copy per client --------------------------------------------------


def test_a_codex_shaped_host_keeps_every_agents_copy(
        lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """1. A stand-in for Codex (an executable where npm installs Codex 0.171.0's binary,
    not Codex) runs the session's copy, then a thinking agent's and a calling agent's,
    all alike; 2. while the newest is called every 1.5 s, `reap --watch --include
    superseded` ends nothing: the measured habit says a copy per client; 3. every copy
    answers. 4. With the habit table empty, the session's copy would be superseded."""
    cfg = mini_config(lab)
    exe, env = codex_standin(lab)
    h = Host(lab, [str(exe), str(HOSTS / "ondemand_host.py"), "sync", "1", cfg], env=env)
    session, thinker, caller = h.copies[0], h.start(), h.start()
    for i in range(3):
        h.use(i)
    _no_end(watch_while(cfg, lambda: h.use(2), ROUNDS, every=EVERY))
    for ident in (session, thinker):
        e = _state(capsys, cfg, ident.pid)
        _protected(e, "measured")
        assert e["superseded"]["habit"]["host"] == "codex"
        assert e["superseded"]["habit"]["version"] == "0.171.0"
    rc, out, _ = run_cli(capsys, "ps", "--config", cfg)
    assert f"not superseded pid {session.pid} (newer copy pid " in out, out
    assert "runs a copy per client (measured: Codex 0.171.0 runs one copy per agent" in out, out
    with monkeypatch.context() as m:
        m.setattr(habits, "MEASURED", ())
        _superseded_once_used(capsys, cfg, session.pid, lambda: h.use(2))
    assert all(is_running(i) for i in (session, thinker, caller))
    for i in range(3):
        h.use(i)


def test_a_gateway_keeps_its_idle_clients_copy(
        lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """1. A gateway (listens on 127.0.0.1, one copy per connection) serves client B, then
    client A; 2. while A calls every 1.5 s and B thinks, `reap --watch --include
    superseded` ends nothing: the host listens, so its clients may be elsewhere; 3. B's
    and A's next calls answer. 4. Were no listening socket seen, B's copy would be
    superseded."""
    cfg = mini_config(lab)
    gw = lab.popen([sys.executable, str(HOSTS / "gateway_host.py"), cfg],
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    words = host_line(gw, "the gateway to listen").split()
    assert words[0] == b"ready", words
    port = int(words[1])
    copies: list[ProcessId] = []
    clients: list[GatewayClient] = []
    try:
        for _ in range(2):
            clients.append(GatewayClient(port))
            started = host_line(gw, "the gateway to start a copy").split()
            ident = identify(int(started[1]))
            assert ident is not None
            lab.started.append(ident)
            copies.append(ident)
            clients[-1].call()
        b, a = clients
        _no_end(watch_while(cfg, a.call, ROUNDS, every=EVERY))
        e = _state(capsys, cfg, copies[0].pid)
        _protected(e, "gateway")
        assert f"tcp 127.0.0.1:{port}" in e["superseded"]["habit"]["evidence"], e
        with monkeypatch.context() as m:
            m.setattr(table, "listening", lambda pid, links=None: [])
            _superseded_once_used(capsys, cfg, copies[0].pid, a.call)
        assert all(is_running(i) for i in copies)
        b.call()
        a.call()
    finally:
        for c in clients:
            c.close()


def test_copies_that_differ_only_in_a_host_set_variable_are_different_servers(
        lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """1. A host starts two copies of an entry that sets K, each with a SESSION_TOKEN of
    its own; 2. while it calls the newer one, `reap --watch --include superseded` ends
    nothing: they are different servers, and `ps` says why in one line; 3. both answer.
    4. Were the token not part of the environment compared, the older would be
    superseded."""
    path = lab.tmp / "mcp.json"
    path.write_text(json.dumps({"mcpServers": {"mini": {
        "command": sys.executable, "args": [str(HOSTS.parent / "servers" / "mini.py")],
        "env": {"K": "v"}}}}))
    cfg = str(path)
    h = Host(lab, [sys.executable, str(HOSTS / "ondemand_host.py"), "sync", "2", cfg,
                   "SESSION_TOKEN"])
    old, new = h.copies
    _no_end(watch_while(cfg, lambda: h.use(1), ROUNDS, every=EVERY))
    e = _state(capsys, cfg, old.pid)
    sup = e["superseded"]
    assert sup["answer"] == "no" and sup["missing"] == "same-server", sup
    assert "another environment: SESSION_TOKEN differs" in sup["reason"], sup
    rc, out, _ = run_cli(capsys, "ps", "--config", cfg)
    assert f"not superseded pid {old.pid}: newer copy pid {new.pid} runs the same command" \
        in out, out
    environ = table.environ
    with monkeypatch.context() as m:
        m.setattr(table, "environ", lambda pid: {
            k: v for k, v in (environ(pid) or {}).items() if k != "SESSION_TOKEN"})
        _superseded_once_used(capsys, cfg, old.pid, lambda: h.use(1))
    h.use(0)
    h.use(1)


@pytest.mark.skipif(os.geteuid() != 0, reason="a nested pid namespace needs root")
def test_a_host_in_another_pid_namespace_is_unknown(
        lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """1. A host runs in a pid namespace of its own (nested in ours), two copies; 2.
    while it calls the newer one, its copies are `unknown` (its pids are not ours to
    compare) and `reap --watch --include superseded` ends nothing. 3. Were the namespace
    ours, the older would be superseded."""
    cfg = mini_config(lab)
    p = lab.popen(["unshare", "--pid", "--fork", sys.executable,
                   str(HOSTS / "ondemand_host.py"), "sync", "2", cfg],
                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = host_line(p, "the host in its namespace")
    assert line.split()[:1] == [b"ready"], line
    host = next(k for k in kids(p.pid) if getattr(table.record(k.pid), "ppid", 0) == p.pid)
    copies = sorted((k for k in kids(host.pid)), key=lambda k: k.start)
    lab.started += [host, *copies]
    assert len(copies) == 2 and table.pid_namespace(host.pid) != table.pid_namespace(
        os.getpid())
    assert p.stdin is not None

    def use() -> None:
        assert p.stdin is not None
        p.stdin.write(b"call 1\n")
        p.stdin.flush()
        assert host_line(p, "the host's answer").strip() == b"ok 1"

    _no_end(watch_while(cfg, use, ROUNDS, every=EVERY))
    sup = _state(capsys, cfg, copies[0].pid)["superseded"]
    assert sup["answer"] == "unknown" and sup["missing"] == "pid-namespace", sup
    assert all(is_running(c) for c in copies)
    ours = table.pid_namespace(os.getpid())
    monkeypatch.setattr(table, "pid_namespace", lambda pid: ours)
    _superseded_once_used(capsys, cfg, copies[0].pid, use)


# ----- 2. the samples file is evidence too ---------------------------------------------


def _forged(h: Host, boot: str | None) -> dict[str, Any]:
    """A samples file that says copy 0 has been idle for an hour, with its current
    counters, while copy 1 read between many pairs of looks: looks before either
    process could have started."""
    now = time.monotonic()
    old, new = h.copies
    io, io_new = table.io_counters(old.pid), table.io_counters(new.pid)
    assert io is not None and io_new is not None
    runs = [[now - 3600 + 300 * i, now - 3600 + 300 * i + 100, *(c * i // 10 for c in io_new)]
            for i in range(1, 9)]
    return {"format": FORMAT, "boot_id": boot, "hosts": {}, "processes": {
        f"{old.pid}:{old.start}": {"runs": [[now - 3600, now - 1, *io]], "settled": now - 3600,
                                   "entries": {}},
        f"{new.pid}:{new.start}": {"runs": runs, "settled": now - 3600, "entries": {}}}}


def _write(doc: dict[str, Any]) -> Path:
    path = Path(default_path())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc))
    path.chmod(0o600)
    return path


def _planned(capsys: pytest.CaptureFixture[str], cfg: str) -> set[int]:
    rc, out, err = run_cli(capsys, "reap", "--dry-run", "--json", "--include", "superseded",
                           "--min-age", "20", "--config", cfg)
    assert rc == 0, err
    return {s["pid"] for s in json.loads(out)["results"]}


@pytest.mark.parametrize("boot", ["this boot, looks before the processes started",
                                  "another boot"])
def test_a_forged_or_other_boot_samples_file_ends_nothing(
        lab: Lab, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        boot: str) -> None:
    """1. A host with two copies, the newer one called; 2. a samples file claims the older
    has been idle for an hour while the newer read: with looks before either process
    started, or written in another boot; 3. `reap --yes --include superseded --min-age
    20` ends nothing, and both copies answer. 4. Had the looks' times been trusted (this
    boot's file), the dry run would have planned the older copy."""
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)  # the lab's home, not the user's
    cfg = mini_config(lab)
    h = Host(lab, [sys.executable, str(HOSTS / "ondemand_host.py"), "sync", "2", cfg])
    h.use(1)
    this = table.boot_id()
    _write(_forged(h, this if boot.startswith("this") else "another-boot"))
    rc, out, err = run_cli(capsys, "reap", "--yes", "--json", "--include", "superseded",
                           "--min-age", "20", "--config", cfg)
    assert rc == 0, err
    assert json.loads(out)["schema"] == "mcp-tether/reap-plan", out  # nothing to end
    assert all(is_running(i) for i in h.copies)
    h.use(0)
    h.use(1)
    monkeypatch.setattr(samples, "START_SLACK", float("inf"))  # any look's time believed
    _write(_forged(h, this))
    assert h.copies[0].pid in _planned(capsys, cfg)
    if not boot.startswith("this"):
        _write(_forged(h, "another-boot"))
        assert h.copies[0].pid not in _planned(capsys, cfg)  # the boot alone refuses it


def test_a_samples_file_not_ours_alone_is_ignored_and_said_once(
        tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """A samples file readable by others, a symlink to one, or another user's is ignored
    whole (said once on stderr per file); ours, mode 0600, of this boot, is read."""
    a = ProcessId(10, 5.0)
    good = tmp_path / "good.json"
    s = Samples(str(good))
    s.observe(a, 1.0, (1, 2, 3, 4), {"entry": "f1"})
    s.mark_side_by_side(ProcessId(9, 4.0), "server", 1.0, "seen")
    s.save()
    assert good.stat().st_mode & 0o777 == 0o600
    back = Samples.open(str(good))
    assert back.idle_since(a, (1, 2, 3, 4)) == 1.0 and back.entries(a) == {"entry": "f1"}
    assert back.side_by_side(ProcessId(9, 4.0), {"server"}) == "seen"
    shared = tmp_path / "shared.json"
    shared.write_bytes(good.read_bytes())
    shared.chmod(0o640)
    link = tmp_path / "link.json"
    link.symlink_to(good)
    refused = [shared, link]
    if os.geteuid() == 0:
        theirs = tmp_path / "theirs.json"
        theirs.write_bytes(good.read_bytes())
        theirs.chmod(0o600)
        os.chown(theirs, 65534, 65534)
        refused.append(theirs)
    capfd.readouterr()
    for path in refused:
        for _ in range(2):
            assert Samples.open(str(path)).procs == {}, path
    err = capfd.readouterr().err
    for path in refused:
        assert err.count(f"ignoring {path}:") == 1, err
    old = json.loads(good.read_text())
    for bad in ({**old, "format": 1}, {**old, "boot_id": None}, "not json"):
        good.write_text(bad if isinstance(bad, str) else json.dumps(bad))
        assert Samples.open(str(good)).procs == {}


def test_a_record_that_contradicts_the_kernel_is_dropped() -> None:
    """Looks before the process could have started, in the future, or counters above the
    ones it has now or going down: the record is dropped, observed again from now."""
    a = ProcessId(10, 5.0)
    for runs, io, age in (
            ([[50.0, 60.0, 1, 1, 1, 1]], (1, 1, 1, 1), 30.0),  # before its start (70 s)
            ([[95.0, 150.0, 1, 1, 1, 1]], (1, 1, 1, 1), 60.0),  # a look in the future
            ([[95.0, 96.0, 5, 5, 5, 5]], (1, 1, 1, 1), 60.0),  # counters above today's
            ([[90.0, 91.0, 5, 5, 5, 5], [92.0, 93.0, 4, 4, 4, 4]], (9, 9, 9, 9), 60.0)):
        s = Samples()
        s.procs[f"{a.pid}:{a.start}"] = {"runs": runs, "settled": runs[0][0], "entries": {}}
        s.observe(a, 100.0, io, {}, age=age)
        assert s.idle_since(a, io) == 100.0 and s.settled(a) is None, runs
    s = Samples()  # a consistent record is kept
    s.procs[f"{a.pid}:{a.start}"] = {"runs": [[80.0, 90.0, 1, 1, 1, 1]], "settled": 80.0,
                                     "entries": {}}
    s.observe(a, 100.0, (1, 1, 1, 1), {}, age=60.0)
    assert s.idle_since(a, (1, 1, 1, 1)) == 80.0 and s.settled(a) == 80.0


# ----- 3. which host is which ---------------------------------------------------------


class _Rec:
    """The fields `habits.identify` reads of a process record."""

    def __init__(self, exe: str, argv: tuple[str, ...] = (), cwd: str = "/") -> None:
        self.exe, self.argv, self.cwd, self.pid = exe, list(argv), cwd, 4242


def test_a_measured_host_is_known_by_its_install_layout_and_manifest_never_by_name(
        tmp_path: Path) -> None:
    """Codex's and Claude Code's executables where npm installs them, each with its
    package's manifest beside it, are those hosts (with the version the manifest says);
    the same path without the manifest, with another package's, or a bare `codex` on
    PATH is no measured host; a per-client sign wins over a measured `shared` habit."""
    def layout(folder: str, manifest: dict[str, str] | None, exe: str) -> str:
        root = tmp_path / folder
        (root / exe).parent.mkdir(parents=True, exist_ok=True)
        (root / exe).write_text("")
        if manifest is not None:
            (root / "package.json").write_text(json.dumps(manifest))
        return str(root / exe)

    triple = "vendor/x86_64-unknown-linux-musl"
    new = layout("a/node_modules/@openai/codex-linux-x64",
                 {"name": "@openai/codex", "version": "0.171.0-linux-x64"}, f"{triple}/bin/codex")
    old = layout("b/node_modules/@openai/codex", {"name": "@openai/codex", "version": "0.50.0"},
                 f"{triple}/codex/codex")
    bare = layout("c/node_modules/@openai/codex-linux-x64", None, f"{triple}/bin/codex")
    other = layout("d/node_modules/@openai/codex-linux-x64", {"name": "left-pad"},
                   f"{triple}/bin/codex")
    claude = layout("e/node_modules/@anthropic-ai/claude-code",
                    {"name": "@anthropic-ai/claude-code", "version": "2.1.332"}, "bin/claude.exe")
    cli = layout("f/node_modules/@anthropic-ai/claude-code",
                 {"name": "@anthropic-ai/claude-code", "version": "1.0.0"}, "cli.js")
    got = {p: habits.identify(_Rec(p)) for p in (new, old, bare, other, claude, "/usr/bin/codex")}
    assert [(r.host, v) for r, v in filter(None, got.values())] == [
        ("codex", "0.171.0"), ("codex", "0.50.0"), ("claude-code", "2.1.332")]
    assert got[bare] is None and got[other] is None and got["/usr/bin/codex"] is None
    node = habits.identify(_Rec("/usr/bin/node", ("node", cli)))
    assert node is not None and node[0].host == "claude-code"
    h = habits.judge(_Rec(old), [], None)
    assert h.per_client and h.source == "measured" and "measured on 0.171.0" in h.evidence
    shared = habits.judge(_Rec(claude), [], None)
    assert shared.kind == "shared" and "no sign of more than one client" in shared.evidence
    assert habits.judge(_Rec(claude), ["tcp 127.0.0.1:9"], None).source == "gateway"
    # Claude Code's own socket (measured with it) is no gateway's; another pid's, or any
    # other listening socket beside it, still is.
    own = f"unix /tmp/cc-socks/{_Rec(claude).pid}.sock"
    assert habits.judge(_Rec(claude), [own], None).kind == "shared"
    assert habits.judge(_Rec(claude), ["unix /tmp/cc-socks/1.sock"], None).kind == "per-client"
    assert habits.judge(_Rec(claude), [own, "unix /run/gw.sock"], None).kind == "per-client"
    assert habits.judge(_Rec("/usr/bin/python3"), [own], None).kind == "per-client"
    assert habits.judge(_Rec(claude), [], "it used pid 4").source == "observed"
    assert habits.judge(_Rec(claude), None, None).kind == "unreadable"
    assert habits.judge(_Rec("/usr/bin/python3"), [], None).kind == "unknown"
