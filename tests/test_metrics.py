"""`ps --format openmetrics` by the Prometheus conventions, read back by real parsers:
prometheus_client's OpenMetrics parser, Debian's prometheus-node-exporter with its
textfile collector, and `promtool check metrics` on the textfiles of `ps` and `reap
--watch`. Leaks are real (scan_lab: a client SIGKILLed under its server)."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families
from prometheus_client.parser import text_string_to_metric_families as prometheus_text

from mcp_tether.scan.model import ScanResult
from mcp_tether.scan.render import render_openmetrics
from polling import until
from scan_lab import DEADLINE, FAR_ENDS, Lab, needs_proc, run_cli
from tools import needed

pytestmark = [pytest.mark.linux, needs_proc]


def _samples(text: str) -> dict[str, list[Any]]:
    """family name -> samples, through the OpenMetrics parser (it rejects bad syntax)."""
    return {f.name: f.samples for f in text_string_to_metric_families(text)}  # type: ignore[no-untyped-call]  # its parser is untyped


def _value(samples: list[Any], **labels: str) -> float:
    (s,) = [s for s in samples if all(s.labels.get(k) == v for k, v in labels.items())]
    return float(s.value)


def test_a_leak_is_counted_by_state_evidence_and_package_with_no_series_per_process(
    lab: Lab, capsys: pytest.CaptureFixture[str],
) -> None:
    """1. A real leak; 2. the output parses as OpenMetrics, every family a gauge named
    mcp_tether_*; 3. counts and bytes by state, evidence and package; 4. `_info` series
    are 1; no pid label anywhere; 5. --per-process adds them, one per tree."""
    lab.pair().orphan()
    rc, out, _ = run_cli(capsys, "ps", "--format", "openmetrics")
    assert rc == 0 and out.endswith("# EOF\n")
    fam = _samples(out)
    assert all(name.startswith("mcp_tether_") for name in fam)
    assert _value(fam["mcp_tether_servers"], state="leaked") >= 1
    assert _value(fam["mcp_tether_server_rss_bytes"], state="leaked") > 0
    assert _value(fam["mcp_tether_evidence_servers"], state="leaked",
                  evidence="parent-gone") >= 1
    leaked_pkgs = [s for s in fam["mcp_tether_package_servers"] if s.labels["state"] == "leaked"]
    assert sum(s.value for s in leaked_pkgs) == _value(fam["mcp_tether_servers"], state="leaked")
    assert [s.value for s in fam["mcp_tether_build_info"]] == [1]
    for name, samples in fam.items():
        if name.endswith("_info"):  # package_info is empty when no package was identified
            assert all(s.value == 1 for s in samples), name
        assert all("pid" not in s.labels for s in samples), name
    fam = _samples(run_cli(capsys, "ps", "--format", "openmetrics", "--per-process")[1])
    infos = fam["mcp_tether_process_info"]
    assert infos and all(s.value == 1 and s.labels["pid"] and s.labels["start"] for s in infos)
    assert len(fam["mcp_tether_process_rss_bytes"]) == len(infos)


def _server(state: str, evidence: list[str], rss: int, package: str = "") -> Any:
    """What the renderer reads of a Server, for a state this version does not know."""
    return SimpleNamespace(
        state=state, evidence=evidence, rss_bytes=rss, pid=4242, found_by=["evidence"],
        ident=SimpleNamespace(start=1.0),
        what=SimpleNamespace(package=package, version="1.0", sdk="", sdk_version=""))


def test_a_state_and_an_evidence_new_to_the_renderer_get_their_series_unchanged() -> None:
    """States and evidence are counted as the scan reports them: a new one (say
    `abandoned`) appears at once; the known ones are written as 0 when absent."""
    result = ScanResult([_server("abandoned", ["parent-gone", "new-evidence"], 1000, "pkg")],
                        scanned=10, unreadable=0, hosts_running=[], config_errors=[],
                        elapsed=0.01)
    fam = _samples(render_openmetrics(result))
    assert _value(fam["mcp_tether_servers"], state="abandoned") == 1
    assert _value(fam["mcp_tether_servers"], state="leaked") == 0
    assert _value(fam["mcp_tether_servers"], state="superseded") == 0  # written even at 0
    assert _value(fam["mcp_tether_evidence_servers"], state="superseded",
                  evidence="newer-copy-used") == 0
    assert _value(fam["mcp_tether_server_rss_bytes"], state="abandoned") == 1000
    assert _value(fam["mcp_tether_evidence_servers"], state="abandoned",
                  evidence="new-evidence") == 1
    assert _value(fam["mcp_tether_package_rss_bytes"], state="abandoned", package="pkg") == 1000


def test_units_are_declared_and_help_text_has_no_quote() -> None:
    """Families named in a base unit carry a `# UNIT` line the parser reads back (after
    TYPE, before HELP); no HELP holds a double quote, which OpenMetrics forbids there."""
    result = ScanResult([_server("leaked", ["parent-gone"], 1000)], scanned=1, unreadable=0,
                        hosts_running=[], config_errors=[], elapsed=0.01)
    text = render_openmetrics(result, per_process=True)
    units = {f.name: f.unit for f in text_string_to_metric_families(text)}  # type: ignore[no-untyped-call]  # its parser is untyped
    assert units["mcp_tether_server_rss_bytes"] == "bytes"
    assert units["mcp_tether_process_rss_bytes"] == "bytes"
    assert units["mcp_tether_scan_duration_seconds"] == "seconds"
    assert units["mcp_tether_servers"] == ""
    lines = text.splitlines()
    i = lines.index("# UNIT mcp_tether_server_rss_bytes bytes")
    assert lines[i - 1].startswith("# TYPE ") and lines[i + 1].startswith("# HELP ")
    assert not [line for line in lines if line.startswith("# HELP ") and '"' in line]


def test_textfile_is_replaced_atomically_and_a_bad_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """1. --textfile writes the file (0644, for the exporter's user), nothing on stdout,
    no temporary file left, in the Prometheus text format (no OpenMetrics `# EOF`);
    2. an old file is replaced whole; 3. a missing folder: exit 2."""
    path = tmp_path / "mcp.prom"
    path.write_text("old\n")
    rc, out, _ = run_cli(capsys, "ps", "--textfile", str(path))
    assert rc == 0 and out == ""
    text = path.read_text()
    assert "old" not in text and "# EOF" not in text and text.endswith("\n")
    assert "mcp_tether_servers" in {f.name for f in prometheus_text(text)}
    assert path.stat().st_mode & 0o777 == 0o644
    assert os.listdir(tmp_path) == ["mcp.prom"]
    rc, _, err = run_cli(capsys, "ps", "--textfile", str(tmp_path / "no" / "x.prom"))
    assert rc == 2 and "--textfile" in err and len(err.strip().splitlines()) == 1
    rc, _, err = run_cli(capsys, "ps", "--json", "--per-process")
    assert rc == 2 and "openmetrics" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_the_node_exporter_textfile_collector_serves_the_series(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """1. A real leak written with --textfile into a folder; 2. Debian's
    prometheus-node-exporter, textfile collector only, on 127.0.0.1; 3. its /metrics has
    our series with the leak and no textfile scrape error."""
    exporter = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if exporter is None:
        if os.environ.get("CI") == "true":
            pytest.fail("prometheus-node-exporter is missing (CI installs it: .ci/run)")
        pytest.skip("prometheus-node-exporter is not installed")
    lab.pair().orphan()
    folder = tmp_path / "textfile"
    folder.mkdir()
    assert run_cli(capsys, "ps", "--textfile", str(folder / "mcp_tether.prom"))[0] == 0
    port = _free_port()
    proc = subprocess.Popen(
        [exporter, f"--web.listen-address=127.0.0.1:{port}", "--collector.disable-defaults",
         "--collector.textfile", f"--collector.textfile.directory={folder}"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def scrape() -> str:  # "" until the exporter listens
        if proc.poll() is not None:  # its stderr says why: it ended, so read() ends
            assert proc.stderr is not None
            raise AssertionError(f"the exporter exited {proc.returncode} before serving "
                                 f"/metrics: {proc.stderr.read().decode(errors='replace')}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
                return r.read().decode()
        except OSError:
            return ""

    try:
        body = until(scrape, f"/metrics from the exporter on port {port}", DEADLINE)
    finally:
        proc.terminate()  # our own child, not yet reaped: its pid is still ours
        proc.wait(timeout=DEADLINE)
        assert proc.stderr is not None
        proc.stderr.close()
    fam = {f.name: f.samples for f in prometheus_text(body)}
    assert _value(fam["node_textfile_scrape_error"]) == 0
    assert _value(fam["mcp_tether_servers"], state="leaked") >= 1
    assert _value(fam["mcp_tether_evidence_servers"], state="leaked", evidence="parent-gone") >= 1
    assert all(s.value == 1 for s in fam["mcp_tether_build_info"])


def _promtool_clean(promtool: str, path: Path) -> None:
    """`promtool check metrics` reads the file as the textfile collector does: no problem,
    not even a lint warning (it prints them and exits 3)."""
    p = subprocess.run([promtool, "check", "metrics"], stdin=path.open("rb"),
                       capture_output=True, text=True, timeout=60)
    assert (p.returncode, p.stdout + p.stderr) == (0, ""), path.read_text()


@pytest.mark.slow
@pytest.mark.requires_linux_backend(FAR_ENDS)
def test_the_textfiles_of_ps_and_reap_watch_pass_promtool_check_metrics_with_no_warning(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """1. Two real leaks of an identified server, one of them allowed; 2. `ps --textfile`
    (and with --per-process) passes promtool; 3. `reap --watch --textfile` ends the other
    and writes its counters (every family with HELP and TYPE, the counters named with
    `_total`), which pass promtool too."""
    promtool = needed("promtool")
    for folder in ("a", "keep-me"):
        lab.pair([sys.executable, str(lab.fake_server(f"{folder}/server.py",
                                                      sdk_import=True))]).orphan()
    for extra in ([], ["--per-process"]):
        path = tmp_path / f"ps{len(extra)}.prom"
        assert run_cli(capsys, "ps", "--textfile", str(path), *extra)[0] == 0
        assert 'mcp_tether_servers{state="leaked"} 2' in path.read_text()
        _promtool_clean(promtool, path)
    prom = tmp_path / "watch.prom"
    watcher = lab.popen(
        [sys.executable, "-m", "mcp_tether", "reap", "--watch", "--yes", "--interval", "0.2",
         "--min-age", "0", "--allow", "*keep-me*", "--grace", "5", "--textfile", str(prom)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    until(lambda: 'mcp_tether_reaped_total{outcome="ended"} 1' in (
        prom.read_text() if prom.exists() else ""), "the watcher's file with the end", DEADLINE)
    watcher.send_signal(signal.SIGTERM)
    assert watcher.wait(DEADLINE) == 128 + signal.SIGTERM
    text = prom.read_text()
    for name in ("mcp_tether_reaped_total", "mcp_tether_reclaimed_bytes_total",
                 "mcp_tether_file_write_errors_total"):
        assert f"# HELP {name} " in text and f"# TYPE {name} counter" in text
    _promtool_clean(promtool, prom)
