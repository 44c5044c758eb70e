"""Per-OS implementations of the primitives `mcp_tether.platform` exposes.

One module per platform, each with the same four functions (`prctl`, `set_subreaper`,
`is_subreaper`, `set_pdeathsig`); `platform.py` imports exactly one of them, once.
A macOS or Windows port is a new file here plus one line in `platform.py`.
"""
