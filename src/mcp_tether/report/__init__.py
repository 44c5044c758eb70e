"""Renderings and file writers: every command that prints a result says it through here.

    text        the rich table, the fixes under it, the configured-servers matrix
    timeline    each scenario's timeline as text (`probe --detail`)
    html        one self-contained page of timelines (`--html`; the host check's page too)
    markdown    a compact summary for CI job pages (`--markdown`)
    junit       JUnit XML for CI dashboards (`--junit`)
    legend      what the host-style tags and level words mean, in every report
    fixes       each remedy said once, numbered, the rows pointing to it
    files       the writers of --html / --markdown / --junit, after the results were shown
    lab_summary the lab's default output: each block's takeaway, the fix per leak
    hostcheck   the host check's text, Markdown and HTML

Guarantees:
- Pure rendering: nothing here computes a verdict, a diagnosis or a remedy; it shows the
  typed results and the result dicts the commands (probe, lab, hostcheck, survey) made.
- The renderings' floor: above the capabilities whose results they show, below the
  commands; no module here imports a command's `cli.py`, and a command's `cli.py`
  imports these, never another command's (tests/test_architecture.py). What lower
  floors print through, escaping and the `--json` envelope, is the ground floor's
  (`mcp_tether.escape`, `mcp_tether.jsonout`).
"""
