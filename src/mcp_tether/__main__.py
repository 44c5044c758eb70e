"""`python -m mcp_tether` is the `mcp-tether` command."""

from mcp_tether.cli import main

raise SystemExit(main())
