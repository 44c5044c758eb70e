"""Renderings and file writers: every command that prints a result says it through here.

    text        the rich table, the fixes under it, the configured-servers matrix
    timeline    each scenario's timeline as text (`probe --detail`)
    html        one self-contained page of timelines (`--html`; the host check's page too)
    markdown    a compact summary for CI job pages (`--markdown`)
    junit       JUnit XML for CI dashboards (`--junit`)
    legend      what the host-style tags and level words mean, in every report
    fixes       each remedy said once, numbered, the rows pointing to it
    files       the writers of --html / --markdown / --junit, after the results were shown
    jsonout     the one `--json` envelope
    escape      one escaping function per output format, for every untrusted string

Guarantees:
- Pure rendering: nothing here computes a verdict, a diagnosis or a remedy; it shows the
  typed results and the result dicts the commands (probe, lab, hostcheck, survey) made.
- No module here imports a command's `cli.py`; a command's `cli.py` imports these, never
  another command's (tests/test_architecture.py).
- This package's own module loads nothing: `mcp-tether run`'s error line reaches
  `report.escape` without the renderers.
"""
