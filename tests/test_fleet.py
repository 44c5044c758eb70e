"""The fleet view in contrib/fleet/, checked by the tools that will run it.

The alerting rules by `promtool check rules` and their unit tests by `promtool test
rules`; the Grafana dashboard's every query through a real Prometheus that scraped a real
node exporter serving a real `reap --watch --textfile` file (a real leak ended, another
left alone), each query returning series; the service units `reap --print-unit` prints by
`systemd-analyze verify` where a manager can start, and the plist by plistlib.
"""

from __future__ import annotations

import json
import os
import plistlib
import shutil
import signal
import socket
import subprocess
import sys
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from mcp_tether.proc import wait_gone
from polling import until
from scan_lab import DEADLINE, FAR_ENDS, Lab, needs_proc, run_cli
from tools import needed

FLEET = Path(__file__).resolve().parents[1] / "contrib" / "fleet"
RULES = FLEET / "mcp-tether.rules.yml"
DASHBOARD = FLEET / "grafana-dashboard.json"
# What Grafana puts in place of its variables: every machine, a window two scrapes fill.
GRAFANA_VARIABLES = {"$__rate_interval": "1m", "$__range": "10m", "$instance": ".*"}
SCRAPE_DEADLINE = 60.0  # seconds: Prometheus starting, then two scrapes, on a busy machine


def test_the_rules_pass_promtool_check_and_their_unit_tests() -> None:
    promtool = needed("promtool")
    check = subprocess.run([promtool, "check", "rules", RULES.name], cwd=FLEET,
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr
    test = subprocess.run([promtool, "test", "rules", "mcp-tether.rules.test.yml"], cwd=FLEET,
                          capture_output=True, text=True, timeout=60)
    assert test.returncode == 0, test.stdout + test.stderr
    assert "SUCCESS" in test.stdout


def _queries() -> list[tuple[str, str]]:
    """(panel title, query with Grafana's variables filled in) for every panel target."""
    doc = json.loads(DASHBOARD.read_text())
    out = []
    for panel in doc["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            for var, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(var, value)
            assert "$" not in expr, f"{panel['title']}: a variable left in {expr}"
            out.append((panel["title"], expr))
    return out


def test_the_dashboard_is_importable_json_with_a_query_per_panel() -> None:
    doc = json.loads(DASHBOARD.read_text())
    assert doc["uid"] and doc["title"] and doc["panels"]
    assert len({p["id"] for p in doc["panels"]}) == len(doc["panels"])
    assert all(p["targets"] and p["description"] for p in doc["panels"])
    names = {v["name"] for v in doc["templating"]["list"]}
    assert {"datasource", "instance"} <= names
    assert len(_queries()) >= len(doc["panels"])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _packaged_server(lab: Lab, folder: str, package: str) -> Path:
    """A fake server whose folder holds a pyproject naming its package (as identified)."""
    script = lab.fake_server(f"{folder}/server.py", sdk_import=True)
    (script.parent / "pyproject.toml").write_text(
        f'[project]\nname = "{package}"\nversion = "1.0"\n')
    return script


def _get(url: str) -> str:
    """The body, or "" while nothing listens yet."""
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return str(r.read().decode())
    except OSError:
        return ""


class Daemon:
    """A server of ours (exporter, Prometheus): started here, ended here, by its Popen
    (a child not yet reaped keeps its pid ours); its stderr says why when it ended early."""

    def __init__(self, argv: list[str], log: Path) -> None:
        self.log = log
        self.name = os.path.basename(argv[0])
        with log.open("wb") as f:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=f)

    def alive(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited {self.proc.returncode}: "
                                 f"{self.log.read_text(errors='replace')[-2000:]}")
        return True

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=DEADLINE)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _query(port: int, expr: str) -> list[dict[str, Any]]:
    body = _get(f"http://127.0.0.1:{port}/api/v1/query?"
                + urllib.parse.urlencode({"query": expr}))
    if not body:
        return []
    doc = json.loads(body)
    assert doc["status"] == "success", (expr, doc)
    return list(doc["data"]["result"])


@pytest.mark.slow
@pytest.mark.linux
@pytest.mark.requires_far_ends(FAR_ENDS)
@needs_proc
def test_every_dashboard_query_returns_series_from_a_real_scrape(
    lab: Lab, tmp_path: Path,
) -> None:
    """1. Two real leaks of identified packages; 2. `reap --watch --textfile` ends one and
    leaves the allowed one, writing its file; 3. Debian's node exporter serves the folder,
    a Prometheus of ours on 127.0.0.1 scrapes it every second with the shipped rules
    loaded; 4. every dashboard query returns series; the counters say one tree ended and
    memory reclaimed; the rules loaded healthy."""
    exporter = needed("prometheus-node-exporter")
    prometheus = needed("prometheus")
    kept = lab.pair([sys.executable, str(_packaged_server(lab, "keep-me", "keep-me-server"))])
    ended = lab.pair([sys.executable, str(_packaged_server(lab, "gone", "leaky-server"))])
    for p in (kept, ended):
        p.orphan()
    folder = tmp_path / "textfile"
    folder.mkdir()
    prom = folder / "mcp_tether.prom"
    watcher = lab.popen(
        [sys.executable, "-m", "mcp_tether", "reap", "--watch", "--yes", "--interval", "0.2",
         "--min-age", "0", "--allow", "*keep-me*", "--grace", "5", "--textfile", str(prom)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    assert wait_gone(ended.server, DEADLINE) is not None

    def written_after_the_end() -> bool:  # a round after the one that ended it
        text = prom.read_text() if prom.exists() else ""
        return ('mcp_tether_reaped_total{outcome="ended"} 1' in text
                and 'mcp_tether_servers{state="leaked"} 1' in text)

    until(written_after_the_end, "the watcher's file to show the leak it ended", DEADLINE)
    watcher.send_signal(signal.SIGTERM)
    assert watcher.wait(DEADLINE) == 128 + signal.SIGTERM  # stopped: 143, as a shell says

    ex_port, prom_port = _free_port(), _free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(json.dumps({  # YAML is a superset of JSON
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": "node",
                            "static_configs": [{"targets": [f"127.0.0.1:{ex_port}"]}]}]}))
    daemons = []
    try:
        daemons.append(Daemon(
            [exporter, f"--web.listen-address=127.0.0.1:{ex_port}",
             "--collector.disable-defaults", "--collector.textfile",
             f"--collector.textfile.directory={folder}"], tmp_path / "exporter.log"))
        daemons.append(Daemon(
            [prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{prom_port}"], tmp_path / "prometheus.log"))
        queries = _queries()

        def all_answer() -> list[tuple[str, str]] | None:
            for d in daemons:
                d.alive()
            empty = [(t, q) for t, q in queries if not _query(prom_port, q)]
            return None if empty else queries

        try:
            until(all_answer, "every dashboard query to return series", SCRAPE_DEADLINE,
                  max_step=0.5)
        except AssertionError:
            empty = [(t, q) for t, q in queries if not _query(prom_port, q)]
            raise AssertionError(f"queries with no series: {empty}") from None
        [scrape_error] = _query(prom_port, "node_textfile_scrape_error")
        assert float(scrape_error["value"][1]) == 0  # the exporter read our file whole
        [reclaimed] = _query(prom_port, "mcp_tether_reclaimed_bytes_total")
        assert float(reclaimed["value"][1]) > 0
        [ended_n] = _query(prom_port, 'mcp_tether_reaped_total{outcome="ended"}')
        assert float(ended_n["value"][1]) == 1
        top = _query(prom_port, dict(queries)["Top leaking packages"])
        assert [r["metric"]["package"] for r in top] == ["keep-me-server"]
        groups = json.loads(_get(f"http://127.0.0.1:{prom_port}/api/v1/rules"))["data"]["groups"]
        rules = [r for g in groups for r in g["rules"]]
        assert len(rules) == RULES.read_text().count("- alert:")
        assert all(r["health"] in ("ok", "unknown") for r in rules), rules
    finally:
        for d in reversed(daemons):
            d.stop()


def test_the_systemd_unit_passes_systemd_analyze_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """`systemd-analyze verify` loads the unit as a manager would: the keys, the sections,
    ExecStart's program exists and is executable."""
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        pytest.skip("systemd-analyze is not installed")
    rc, out, _ = run_cli(capsys, "reap", "--print-unit", "systemd", "--textfile",
                         str(tmp_path / "mcp_tether.prom"), "--allow", "shared *")
    assert rc == 0
    unit = tmp_path / "mcp-tether-reap.service"
    unit.write_text(out)
    p = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL)
    if "Failed to initialize manager" in p.stderr or "Failed to setup" in p.stderr:
        pytest.skip(f"no systemd manager can start here: {p.stderr.strip()[:200]}")
    mine = [ln for ln in p.stderr.splitlines() if unit.name in ln]
    assert p.returncode == 0 and not mine, p.stderr


def test_the_launchd_plist_names_an_executable_and_the_keys_launchd_reads(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """No plutil on Linux: plistlib parses it, the program it runs exists, the keys have
    launchd's types."""
    rc, out, _ = run_cli(capsys, "reap", "--print-unit", "launchd", "--textfile",
                         str(tmp_path / "x & <y>.prom"))
    assert rc == 0
    doc = plistlib.loads(out.encode())
    assert isinstance(doc["Label"], str) and doc["Label"]
    args = doc["ProgramArguments"]
    assert all(isinstance(a, str) for a in args)
    assert os.path.isabs(args[0]) and os.access(args[0], os.X_OK), args[0]
    assert args[args.index("--textfile") + 1] == str(tmp_path / "x & <y>.prom")
    assert doc["RunAtLoad"] is True and doc["KeepAlive"] is True
    assert os.path.isabs(doc["StandardErrorPath"]) and os.path.isabs(doc["StandardOutPath"])


def test_reap_textfile_without_watch_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """A one-off reap writes no metrics: `ps --textfile` does; one line, exit 2."""
    rc, _, err = run_cli(capsys, "reap", "--dry-run", "--textfile", str(tmp_path / "x.prom"))
    assert rc == 2 and "--watch" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "x.prom").exists()


def test_the_janitor_counters_keep_every_outcome_and_file_in_both_text_formats() -> None:
    """The counters parse as counters in the Prometheus text format the textfile collector
    reads (HELP and TYPE name the `_total` series) and in OpenMetrics (the family without
    `_total`, bytes declared); every outcome and every written file is there even at 0
    (an alert on an absent series misfires); the scan's gauges are all still there."""
    from prometheus_client.openmetrics.parser import text_string_to_metric_families as om
    from prometheus_client.parser import text_string_to_metric_families as prometheus

    from mcp_tether.scan.model import ScanResult
    from mcp_tether.scan.reap import REAP_OUTCOMES
    from mcp_tether.scan.render import render_openmetrics
    from mcp_tether.scan.watch import WRITTEN_FILES

    result = ScanResult([], scanned=3, unreadable=0, hosts_running=[], config_errors=[],
                        elapsed=0.01)
    plain = {f.name for f in om(render_openmetrics(result))}  # type: ignore[no-untyped-call]  # its parser is untyped
    for dialect, parse in (("prometheus", prometheus), ("openmetrics", om)):
        text = render_openmetrics(result, reaped={"ended": 2}, reclaimed_bytes=4096,
                                  write_errors={"textfile": 3, "samples": 0}, dialect=dialect)
        fams = {f.name: f for f in parse(text)}  # type: ignore[no-untyped-call]  # its parser is untyped
        assert plain < fams.keys(), dialect
        reaped, reclaimed = fams["mcp_tether_reaped"], fams["mcp_tether_reclaimed_bytes"]
        errors = fams["mcp_tether_file_write_errors"]
        assert reaped.type == reclaimed.type == errors.type == "counter", dialect
        assert all(f.documentation for f in fams.values()), dialect
        values = {s.labels["outcome"]: s.value for s in reaped.samples}
        assert values == {o: (2 if o == "ended" else 0) for o in REAP_OUTCOMES}
        assert [(s.name, s.value) for s in reclaimed.samples] == [
            ("mcp_tether_reclaimed_bytes_total", 4096)]
        assert {s.labels["file"]: s.value for s in errors.samples} == {
            f: (3 if f == "textfile" else 0) for f in WRITTEN_FILES}
    assert reclaimed.unit == "bytes"  # the OpenMetrics one, declared by its UNIT line
