"""The exception tree of mcp-tether.

Every failure a user can cause (bad command, bad config, a server that never answers)
is a `TetherError` carrying a one-line message and the exit code the CLI returns for it.
OSErrors are translated into these at the boundary that knows what was being attempted;
the CLI maps them to exit codes in one place (`cli.main`).
"""

from __future__ import annotations

__all__ = [
    "TetherError",
    "UsageError",
    "CommandNotFound",
    "CommandNotExecutable",
    "ConfigError",
    "WorkingDirectoryError",
    "ProcessGone",
    "CacheError",
    "EXIT_OK",
    "EXIT_FAILED",
    "EXIT_USAGE",
    "EXIT_NOT_EXECUTABLE",
    "EXIT_NOT_FOUND",
]

# Exit codes, shell conventions (tini, POSIX sh): documented in the README.
EXIT_OK = 0
EXIT_FAILED = 1  # a check ran and found a problem (a probe scenario failed)
EXIT_USAGE = 2  # bad arguments, bad config, set-up error
EXIT_NOT_EXECUTABLE = 126
EXIT_NOT_FOUND = 127


class TetherError(Exception):
    """Base error: `msg` is one line for stderr, `exit_code` what the CLI returns."""

    exit_code = EXIT_USAGE

    def __init__(self, msg: str, *, exit_code: int | None = None) -> None:
        super().__init__(msg)
        self.msg = msg
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return self.msg


class UsageError(TetherError):
    """Arguments that do not make sense together."""


class CommandNotFound(TetherError):
    """The server command does not exist on PATH or at the given path."""

    exit_code = EXIT_NOT_FOUND

    def __init__(self, name: str) -> None:
        super().__init__(f"{name}: command not found")
        self.name = name


class CommandNotExecutable(TetherError):
    """The server command exists but cannot be executed (permissions, a directory)."""

    exit_code = EXIT_NOT_EXECUTABLE

    def __init__(self, name: str, reason: str = "permission denied") -> None:
        super().__init__(f"{name}: cannot execute: {reason}")
        self.name = name


class WorkingDirectoryError(TetherError):
    """The working directory given for a server does not exist or cannot be entered.

    Its own error (exit 2, a set-up error) so it is never reported as the command
    missing, which is what a failed chdir before exec looked like.
    """

    def __init__(self, path: str, reason: str = "no such directory") -> None:
        super().__init__(f"working directory {path}: {reason}")
        self.path = path


class ConfigError(TetherError):
    """A host config file that cannot be read or parsed; says where."""

    def __init__(
        self, path: str, msg: str, *, line: int | None = None, column: int | None = None
    ) -> None:
        where = path if line is None else f"{path}:{line}:{column or 1}"
        super().__init__(f"{where}: {msg}")
        self.path = path
        self.line = line
        self.column = column


class ProcessGone(TetherError):
    """The process exited (or its pid was reused) before we could act on it."""

    def __init__(self, pid: int, name: str = "") -> None:
        super().__init__(f"process {pid} {name}".rstrip() + " is gone")
        self.pid = pid
        self.name = name


class CacheError(TetherError):
    """A cache folder (`MCP_TETHER_CACHE`) that cannot be used safely: a file, a path under
    a file, a dangling symlink, a symlink to another user's folder, not writable."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"cache {path}: {reason}")
        self.path = path
        self.reason = reason
