"""The README and its recipes: each recipe is an example file, included verbatim in the
page the README links to, and tested here; every command is in the README's table and
every link of the README and docs/ leads somewhere.

A recipe cannot rot: if a page and its example file differ, or the example stops doing
what the page promises, a test here fails.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_tether.probe import ProbeOptions, probe
from readme_examples import PAGES, README, ROOT, shown

EXAMPLES = ROOT / "examples"
PY_SERVER = EXAMPLES / "python-server" / "server.py"
NODE_SERVER = EXAMPLES / "node-server" / "server.mjs"


def _example_files() -> list[Path]:
    return sorted(p for p in EXAMPLES.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def test_every_example_file_is_on_a_page_verbatim() -> None:
    """1. Each example has one marked block, on the README or a docs/ page the README
    links to. 2. The block is the file's text, byte for byte."""
    on_pages = shown()
    linked = set(re.findall(r"\]\((docs/[^)#]+\.md)", README.read_text())) | {"README.md"}
    for path in _example_files():
        rel = str(path.relative_to(ROOT))
        assert rel in on_pages, f"no page has a block for {rel} (add `<!-- example: {rel} -->`)"
        assert len(on_pages[rel]) == 1, f"{rel} is shown on several pages: {on_pages[rel]}"
        page, body = on_pages[rel][0]
        assert str(page.relative_to(ROOT)) in linked, f"the README does not link to {page}"
        assert body == path.read_text(), (
            f"{page.name}'s block for {rel} differs from the file: "
            "run `python tests/readme_examples.py`")


def test_the_python_recipe_passes_its_own_pytest_check() -> None:
    """The recipe's test file, run by pytest as a user would, passes."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         str(EXAMPLES / "python-server" / "test_server.py")],
        cwd=EXAMPLES / "python-server", stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_the_python_recipe_without_the_helper_leaks(tmp_path: Path) -> None:
    """The check can fail: the same server with plain `mcp.run()` is orphaned at exit."""
    broken = tmp_path / "server.py"
    text = PY_SERVER.read_text()
    assert "mcp_tether.run(mcp)" in text
    broken.write_text(text.replace("mcp_tether.run(mcp)", "mcp.run()"))
    report = probe([sys.executable, str(broken)],
                   ProbeOptions(scenarios=("exit",), ready_timeout=60))
    assert [r.verdict for r in report.results] in (["orphaned"], ["lingered"]), report.results


def _node_copy(tmp_path: Path, text: str) -> Path:
    from mcp_tether.lab import node_env

    if node_env.missing_tools():
        pytest.skip(node_env.missing_tools() or "")
    import node_tether_env  # the SDK, zod and this checkout's node/ package as mcp-tether

    folder = node_tether_env.ensure()
    (tmp_path / "node_modules").symlink_to(folder / "node_modules")
    script = tmp_path / "server.mjs"
    script.write_text(text)
    return script


@pytest.mark.node
def test_the_node_recipe_passes_every_scenario(tmp_path: Path) -> None:
    """The Node recipe ends on every trigger, the parent-death one included."""
    script = _node_copy(tmp_path, NODE_SERVER.read_text())
    report = probe(["node", str(script)], ProbeOptions(ready_timeout=60), level="robust")
    assert report.meets == "robust"
    assert all(r.passed for r in report.results), [(r.scenario, r.verdict) for r in report.results]


@pytest.mark.node
def test_the_node_recipe_without_its_one_line_leaks(tmp_path: Path) -> None:
    """The check can fail: without the tether(...) line the timer keeps it alive."""
    text = NODE_SERVER.read_text()
    stripped = "\n".join(ln for ln in text.splitlines() if not ln.startswith("tether("))
    assert stripped != text
    script = _node_copy(tmp_path, stripped + "\n")
    report = probe(["node", str(script)],
                   ProbeOptions(scenarios=("close",), ready_timeout=60))
    assert [r.verdict for r in report.results] == ["terminated"], report.results


def test_the_configured_servers_recipe_reports_each_server_and_fails_on_a_leak(
    tmp_path: Path,
) -> None:
    """1. a Claude Code config: a server that exits, one that leaks a thread, a remote;
    2. the recipe prints one line each (the leak meets none) and exits 1; the API
       itself neither asks nor lists what it starts (the CLI does)."""
    mini = ROOT / "tests" / "servers" / "mini.py"
    config = tmp_path / ".mcp.json"
    config.write_text(json.dumps({"mcpServers": {
        "good": {"command": sys.executable, "args": ["-S", str(mini)]},
        "leaky": {"command": sys.executable, "args": ["-S", str(mini), "--thread"]},
        "remote": {"url": "https://example.invalid/mcp"}}}))
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / "configured" / "check_configs.py"), "claude-code",
         str(config)], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert proc.stdout.splitlines() == ["good: spec", "leaky: none", "remote: skipped"], (
        proc.stdout + proc.stderr)
    assert "will start" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


def _section(page: str, title: str) -> str:
    """The text under a `## title` heading of a page, up to the next `## ` heading."""
    text = (ROOT / page).read_text()
    assert f"\n## {title}\n" in text, f"{page} has no section `## {title}`"
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def _leaked_servers_commands() -> list[list[str]]:
    section = _section("docs/leaked-servers.md", "Leaked servers on my machine: the first commands")
    block = re.search(r"^```\n(.*?)^```$", section, re.M | re.S)
    assert block, "the leaked-servers recipe has no command block"
    out = []
    for line in block.group(1).splitlines():
        cmd = line.split("#", 1)[0].strip()
        if cmd:
            out.append(shlex.split(cmd))
    return out


def test_the_leaked_servers_recipe_commands_run_without_a_terminal(tmp_path: Path) -> None:
    """Each command of the recipe runs on a machine with no host config, no TTY, no stdin.

    `reap` without `--yes` and without a terminal refuses (2) or finds nothing (0);
    `wrap` with no config file says so (2); none of them prints a traceback.
    """
    exe = shutil.which("mcp-tether") or pytest.skip("mcp-tether is not on PATH")
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / ".config"),
               XDG_STATE_HOME=str(tmp_path / ".state"), APPDATA=str(tmp_path / "AppData"))
    commands = _leaked_servers_commands()
    assert [c[:2] for c in commands][:3] == [["mcp-tether", "ps"], ["mcp-tether", "reap"],
                                              ["mcp-tether", "reap"]]
    for argv in commands:
        proc = subprocess.run([exe, *argv[1:]], env=env, cwd=tmp_path, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        assert "Traceback" not in proc.stderr, (argv, proc.stderr)
        assert proc.returncode in (0, 2), (argv, proc.returncode, proc.stderr)


def test_the_python_recipe_documents_every_fixture_option_with_its_default() -> None:
    """Each `mcp_lifecycle` option (the ProbeOptions fields) is named in the Python
    recipe, and the numeric defaults it states are the probe's own."""
    import dataclasses

    recipe = _section("docs/python-servers.md", "The recipe: a server, and its check in CI")
    defaults = ProbeOptions()
    for field in dataclasses.fields(ProbeOptions):
        assert f"`{field.name}" in recipe or f'"{field.name}' in recipe or (
            field.name == "scenarios" and "scenarios=None" in recipe), field.name
    for name in ("window", "idle", "ready_timeout"):
        assert f"`{name}` ({getattr(defaults, name):g})" in recipe, name
    assert defaults.grace == defaults.term_grace
    assert f"`grace`, `term_grace` ({defaults.grace:g} each)" in recipe


def test_the_readme_commands_table_names_every_command_and_links_its_page() -> None:
    """Each `mcp-tether` command is in the README's commands table, on a row with a link."""
    from mcp_tether.cli import COMMANDS

    table = README.read_text().split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    named: set[str] = set()
    for row in table.splitlines()[3:]:
        if not row.startswith("| "):
            continue
        first = row.split(" | ", 1)[0]
        names = set(re.findall(r"`(?:mcp-tether )?([a-z]+)", first))
        assert re.search(r"\]\(docs/[^)]+\)", row), f"no link into docs/ on: {row}"
        named |= names
    assert not sorted(COMMANDS.keys() - named), sorted(COMMANDS.keys() - named)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_every_relative_link_of_the_readme_and_docs_leads_somewhere() -> None:
    """A link to a file names one that exists; a link to `page.md#anchor`, a heading of it."""
    broken = []
    for page in [*PAGES, ROOT / "node" / "README.md"]:
        text = re.sub(r"^```.*?^```$", "", page.read_text(), flags=re.M | re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            if not dest.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
            elif anchor and dest.suffix == ".md":
                headings = re.findall(r"^#+ (.+)$", re.sub(r"^```.*?^```$", "", dest.read_text(),
                                                          flags=re.M | re.S), flags=re.M)
                if anchor not in {_slug(h) for h in headings}:
                    broken.append(f"{page.relative_to(ROOT)}: {target} (no such heading)")
    assert not broken, broken
