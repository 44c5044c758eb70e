"""The survey's selection rules pick stdio MCP servers by downloads (pure: small tsv files)."""

from __future__ import annotations

from pathlib import Path

from mcp_tether.survey.select import candidates, is_server, main

NPM = """name\tversion\tdownloads_a_month\tsummary
@modelcontextprotocol/sdk\t1.0.0\t900\tModel Context Protocol implementation for TypeScript
big-mcp\t2.0.0\t500\tMCP server for big things
figma-developer-mcp\t0.1.0\t400\tImplement designs in any framework
@azure/mcp-linux-x64\t2.0.5\t300\tAzure MCP Server for linux on x64
fastmcp\t4.0.0\t200\tA TypeScript framework for building MCP servers.
mcp-remote\t0.1.0\t150\tRemote proxy allowing local-only clients to connect to remote servers
small-mcp-server\t1.0.0\t100\tA server
left-pad\t1.0.0\t9999\tnot MCP
"""
PYPI = """name\tversion\tmonth\trank_among_15000_most_downloaded\tsummary
mcp\t2.3.0\t2026-10\t124\tModel Context Protocol SDK
mcp-server-time\t1.0\t2026-10\t7873\tA Model Context Protocol server providing time
awslabs.docs-mcp-server\t1.0\t2026-10\t4204\tAn AWS Labs MCP server
unranked-mcp-server\t1.0\t2026-10\t\tA MCP server nobody ranks
"""


def _lists(tmp_path: Path) -> Path:
    (tmp_path / "npm.tsv").write_text(NPM)
    (tmp_path / "pypi.tsv").write_text(PYPI)
    return tmp_path


def test_servers_are_kept_and_sdks_frameworks_and_platform_binaries_left_out(
        tmp_path: Path) -> None:
    c = candidates(_lists(tmp_path))
    assert [x.name for x in c["npm"]] == [
        "big-mcp", "figma-developer-mcp", "mcp-remote", "small-mcp-server"]
    assert [x.name for x in c["pypi"]] == ["awslabs.docs-mcp-server", "mcp-server-time"]
    assert is_server("npm", "fastmcp", "A TypeScript framework for building MCP servers.")[1]


def test_the_printed_list_keeps_a_known_lines_options_with_the_new_version(
        tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    known = tmp_path / "old.list"
    known.write_text("pypi:awslabs.docs-mcp-server==0.9 env=K=dummy -- --x\n")
    assert main(["--packages", str(_lists(tmp_path)), "--list", str(known)]) == 0
    out = capsys.readouterr().out
    assert "pypi:awslabs.docs-mcp-server==1.0 rank=" in out and "env=K=dummy -- --x" in out
    assert "npm:big-mcp@2.0.0 downloads=500\n" in out and "# 500 downloads a month" in out
