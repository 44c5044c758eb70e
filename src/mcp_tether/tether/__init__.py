"""The library helper: a Python MCP server that ends its own way, promptly, when its client goes.

```python
import mcp_tether

@mcp_tether.on_shutdown
async def close_pool() -> None: ...      # sync or async; async ones run on the server's loop

mcp_tether.run(mcp)                      # MCPServer (mcp 2.x), FastMCP (mcp 1.x, fastmcp)

with mcp_tether.tethered() as t:         # any other stdio program, the low-level Server
    t.add_cleanup(pool.close)
    t.bind(server)                       # optional: end `server` its own way, hooks on its loop
    anyio.run(main)

subprocess.Popen(cmd, env=mcp_tether.outside_tether(), start_new_session=True)
                                         # a child for the user: not ended with the server
```

Layout: `coordinator` (triggers, the one shutdown, the exit), `binding` (the hold on a
running SDK server: its loop, its tapped streams, drain), `hooks` (registration by
process, each hook in its share of the deadline). What runs, in which order, on which
loop, per trigger: docs/python-servers.md.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NoReturn, TypeVar

from mcp_tether.tether import hooks as _hooks
from mcp_tether.tether.coordinator import (
    DEFAULT_DEADLINE,
    EOF_GRACE,
    HOST_WINDOW,
    PARENT_POLL_INTERVAL,
    ShutdownCoordinator,
)

__all__ = [
    "on_shutdown",
    "outside_tether",
    "run",
    "tethered",
    "ShutdownCoordinator",
    "DEFAULT_DEADLINE",
    "EOF_GRACE",
    "HOST_WINDOW",
    "PARENT_POLL_INTERVAL",
]

F = TypeVar("F", bound=Callable[..., Any])


def on_shutdown(fn: F) -> F:
    """Register `fn` (sync, or async) to run once at shutdown; usable as a decorator.

    Hooks run newest first, with those added by `add_cleanup`, only in the process that
    registered them. Registering without ever arming the helper is warned about once.
    """
    _hooks.register(fn)
    return fn


def outside_tether(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """An environment for a child the server starts for its user: a copy of `env`
    (default: this process's) marked MCP_TETHER_OUTSIDE, so that the tree kill of this
    server (the helper's, the guard's, the Node watchdog's) leaves the child and its
    descendants running, and names them on stderr.

    Pass it as the child's environment: `subprocess.Popen(cmd, env=outside_tether(),
    start_new_session=True)`. Without a session of its own the child is still in the
    server's process group, which a host may signal as a whole. What the child starts
    inherits the mark; a server the child runs and tethers still ends its own children.
    """
    from mcp_tether.proc.mark import outside  # deferred: not on the helper's start-up path

    return outside(env)


def tethered(
    deadline: float = DEFAULT_DEADLINE, *, drain: float | None = None
) -> ShutdownCoordinator:
    """Context manager for any stdio program: `with tethered() as t: t.add_cleanup(...)`.

    Leaving the block (the program's transport ended) shuts down and exits the process:
    code after the `with` statement never runs. An exception leaving the block is
    printed and exits with status 1; `SystemExit(n)` exits with n. Without `t.bind()`,
    a signal or parent death cannot end the program's own serving: its hooks still run
    (async ones in a fresh loop), then the process exits.
    """
    return ShutdownCoordinator(deadline=deadline, drain=drain, stdio=True)


def _stdio_entry(server: Any, run_kwargs: dict[str, Any]) -> Any:
    """The coroutine function `server.run(transport="stdio")` would hand to anyio.run."""
    import functools
    import inspect

    run_async = getattr(server, "run_async", None)  # fastmcp
    if run_async is not None and inspect.iscoroutinefunction(run_async):
        return functools.partial(run_async, "stdio", **run_kwargs)
    run_stdio = getattr(server, "run_stdio_async", None)  # mcp 1.x FastMCP, 2.x MCPServer
    if run_stdio is not None and inspect.iscoroutinefunction(run_stdio) and not run_kwargs:
        return run_stdio
    return None


def run(
    server: Any,
    *,
    deadline: float = DEFAULT_DEADLINE,
    drain: float | None = None,
    transport: str = "stdio",
    **run_kwargs: Any,
) -> NoReturn:
    """Serve `server` like `server.run(transport=..., **run_kwargs)`, then shut down; never returns.

    For `MCPServer` (mcp 2.x), `FastMCP` (mcp 1.x, and the standalone `fastmcp`). With
    stdio the helper runs the SDK's own async entry on its own `anyio.run`, bound (see
    `binding`), so that any trigger ends the server its own way and async hooks run on
    its loop. A low-level `Server` has an async `run(read, write, options)`: use
    `tethered()` and `bind()`. Parent death and stdin are watched for stdio only.
    """
    import inspect  # deferred: only this entry point needs it

    runner = getattr(server, "run", None)
    if runner is None or inspect.iscoroutinefunction(runner):
        raise TypeError(
            f"mcp_tether.run() needs a server with a synchronous run() (MCPServer, FastMCP);"
            f" for {type(server).__name__} wrap your own anyio.run(...) in mcp_tether.tethered()"
        )
    coordinator = ShutdownCoordinator(deadline=deadline, drain=drain, stdio=transport == "stdio")
    entry = _stdio_entry(server, run_kwargs) if transport == "stdio" else None
    if entry is not None:  # bound before arming: a trigger at once must find it
        binding = coordinator._binding = coordinator._new_binding()
        lowlevel = _find_lowlevel(server)
        if lowlevel is not None:
            binding.install(lowlevel)
    coordinator.start()
    try:
        if entry is None:
            runner(transport=transport, **run_kwargs)
        else:
            import anyio  # the server's SDK imported it already

            anyio.run(coordinator.serve, entry)
    except BaseException as exc:  # noqa: BLE001 - every way out goes through the one exit
        coordinator.transport_ended(exc)
    else:
        if entry is None:
            coordinator.transport_ended(None)
        else:
            coordinator._exited.wait()
    # Only with a recorder `exit`; a real one never returns.
    coordinator.close()
    raise SystemExit(coordinator.status or 0)


def _find_lowlevel(server: Any) -> Any:
    from mcp_tether.tether.binding import find_lowlevel

    return find_lowlevel(server)
