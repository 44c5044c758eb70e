"""The packages capability's errors, and the exit codes they carry (documented in --help).

Guarantees: one line each. A package that cannot be fetched (not in the registry, no
network and nothing cached, the installer failed) exits 127, like a command that is not
found: the server is not there to run. A package that installed but offers no server
command exits 126, like a command that cannot be executed. A package with several
commands and no `--bin` is a usage error (2) listing the choices.
"""

from __future__ import annotations

from mcp_tether.errors import EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, TetherError
from mcp_tether.packages.spec import PackageSpec

__all__ = ["PackageError", "fetch_failed", "no_command", "EXIT_NO_PACKAGE", "EXIT_NO_COMMAND"]

EXIT_NO_PACKAGE = EXIT_NOT_FOUND  # 127: cannot be fetched, not cached
EXIT_NO_COMMAND = EXIT_NOT_EXECUTABLE  # 126: installed, no bin / console script


class PackageError(TetherError):
    """A package that cannot be installed or run; `msg` is one line."""

    exit_code = EXIT_NO_PACKAGE


def fetch_failed(spec: PackageSpec, reason: str) -> PackageError:
    return PackageError(f"{spec.text}: cannot be fetched: {reason}", exit_code=EXIT_NO_PACKAGE)


def no_command(spec: PackageSpec, version: str, what: str) -> PackageError:
    return PackageError(f"{spec.text} ({version}) has no server command: {what}",
                        exit_code=EXIT_NO_COMMAND)
