"""Probe every stdio server of a host's config file, started as that host starts it.

    python check_configs.py claude-code .mcp.json    # exit 1 when one fails at level spec
"""

import sys

from mcp_tether import hosts
from mcp_tether.probe import probe_configured

host, config = sys.argv[1], sys.argv[2]
entries, errors = hosts.configured_servers(host, config=config)
for error in errors:
    print(f"unreadable: {error.msg}", file=sys.stderr)
report = probe_configured(entries)  # starts them for real, every scenario in parallel
for server in report.servers:
    print(f"{server.label}: {server.meets}")  # spec / robust / none; skipped, disabled, error
sys.exit(0 if report.passed and not errors else 1)
