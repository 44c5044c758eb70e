"""pytest plugin entry point (registered as `pytest11`); fixtures arrive with the
library-helper work. Kept importable so that installing mcp-tether never breaks pytest."""
