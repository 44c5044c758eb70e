"""Cleanup hooks: who registered them, and running them each within its share of a deadline.

Guarantees:
- A hook runs only in the process that registered it. In a child forked by a hook, the
  thread that ran the hook ends the child (`os._exit(0)`) as soon as the hook returns
  there, so the child never runs the remaining hooks (nor our exit line).
- Hooks run one after another, newest first. Each gets an equal share of the time that
  is left (recomputed before each hook, so a quick hook leaves more for the next); a
  hook still running at the end of its share is cut off (left running in its daemon
  thread, or cancelled on the loop) and the next one starts. A hook that raises is
  logged; the rest still run. Every outcome is returned, nothing is silently dropped.
- Async hooks run on the server's own event loop when it is alive (they can await
  tasks and futures bound to it); otherwise in a fresh loop in a daemon thread. Sync
  hooks run in a daemon thread of their own, so a hung one never blocks the loop.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from itertools import count
from typing import Any

from mcp_tether import log

__all__ = ["Hook", "HookOutcome", "register", "registered", "run_hooks", "LoopRunner", "armed"]

UNARMED_WARNING_AFTER = 5.0  # seconds from the first on_shutdown() to a warning if unarmed

_seq = count()
_lock = threading.Lock()
_global: list[Hook] = []  # on_shutdown(): shared by whichever coordinator is armed
armed = threading.Event()  # set once mcp_tether.run() or tethered() armed the helper
_unarmed_watch_started = False

# (coroutine factory, timeout) -> outcome, or None when the loop is not there any more.
LoopRunner = Callable[[Callable[[], Coroutine[Any, Any, Any]], float], "str | None"]


@dataclass(frozen=True)
class Hook:
    fn: Callable[[], Any]
    seq: int
    pid: int  # the process that registered it: the only one that runs it

    @property
    def name(self) -> str:
        fn = self.fn
        return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


@dataclass(frozen=True)
class HookOutcome:
    name: str
    outcome: str  # "ok", "failed", "cut off", "skipped"
    why: str = ""
    ms: float = 0.0


def register(fn: Callable[[], Any], into: list[Hook] | None = None) -> Hook:
    """Record `fn` for this process (`into` a coordinator's own list, else the global one)."""
    if not callable(fn):
        raise TypeError(f"a cleanup hook must be callable, got {fn!r}")
    global _unarmed_watch_started
    with _lock:
        hook = Hook(fn, next(_seq), os.getpid())
        (_global if into is None else into).append(hook)
        start_watch = into is None and not armed.is_set() and not _unarmed_watch_started
        _unarmed_watch_started = _unarmed_watch_started or start_watch
    if start_watch:
        import atexit

        atexit.register(_warn_if_unarmed)
        threading.Thread(target=_warn_if_unarmed, args=(UNARMED_WARNING_AFTER,),
                         name="mcp-tether-unarmed", daemon=True).start()
    return hook


_warned = threading.Lock()


def _warn_if_unarmed(after: float = 0.0) -> None:
    """Once: hooks were registered, yet nothing armed the helper (they would never run)."""
    if armed.wait(after) or not _warned.acquire(blocking=False):
        return
    names = ", ".join(h.name for h in registered())
    log.say(f"mcp-tether: on_shutdown hooks registered but the helper is not armed"
            f" (call mcp_tether.run(server) or enter mcp_tether.tethered()): {names}"
            f" will not run")


def registered(extra: Sequence[Hook] = ()) -> list[Hook]:
    """Global and `extra` hooks, newest first."""
    with _lock:
        hooks = sorted([*_global, *extra], key=lambda h: h.seq)
    hooks.reverse()
    return hooks


def _leave_if_forked(owner: int) -> None:
    if os.getpid() != owner:
        os._exit(0)  # a hook forked and returned in the child: the child stops here


def _log_failure(hook: Hook, exc: BaseException) -> None:
    log.say(
        f"mcp-tether: cleanup hook {hook.name} raised:\n"
        + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip()
    )


def _in_thread(hook: Hook, owner: int, share: float) -> tuple[str, str]:
    result: dict[str, BaseException | None] = {}

    def work() -> None:
        try:
            value = hook.fn()
            if hasattr(value, "__await__"):  # no loop to lend: a fresh one, in this thread
                import asyncio  # deferred: most servers imported it already

                async def _await() -> Any:
                    return await value

                asyncio.run(_await())
        except BaseException as exc:  # noqa: BLE001 - a hook must not stop the rest
            _leave_if_forked(owner)
            result["exc"] = exc
            return
        _leave_if_forked(owner)
        result["exc"] = None

    worker = threading.Thread(target=work, name=f"mcp-tether-hook-{hook.seq}", daemon=True)
    worker.start()
    worker.join(share)
    if worker.is_alive():
        return "cut off", f"still running after its {share:.2f} s share"
    exc = result.get("exc")
    if exc is not None:
        _log_failure(hook, exc)
        return "failed", f"{type(exc).__name__}: {exc}"
    return "ok", ""


def _is_async(fn: Callable[[], Any]) -> bool:
    import inspect  # deferred: only a shutdown needs it

    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - an object with an async __call__
    )


def run_hooks(hooks: list[Hook], until: float, on_loop: LoopRunner | None) -> list[HookOutcome]:
    """Run `hooks` in order, each within its share of the time left before `until`."""
    owner = os.getpid()
    outcomes: list[HookOutcome] = []
    for i, hook in enumerate(hooks):
        if hook.pid != owner:
            outcomes.append(HookOutcome(hook.name, "skipped", "registered in another process"))
            continue
        left = until - time.monotonic()
        if left <= 0:
            outcomes.append(HookOutcome(hook.name, "skipped", "no time left before the deadline"))
            continue
        share = left / (len(hooks) - i)
        t0 = time.monotonic()
        outcome: str | None = None
        why = ""
        if on_loop is not None and _is_async(hook.fn):
            answer = on_loop(_guarded(hook, owner), share)
            if answer is not None:
                outcome, _, why = answer.partition(":")
        if outcome is None:  # sync, or no loop to run it on
            outcome, why = _in_thread(hook, owner, share)
        ms = (time.monotonic() - t0) * 1000
        outcomes.append(HookOutcome(hook.name, outcome, why.strip(), ms))
    return outcomes


def _guarded(hook: Hook, owner: int) -> Callable[[], Coroutine[Any, Any, Any]]:
    """The hook as a coroutine for the server's loop: logs a failure, stops a forked child."""

    async def call() -> str:
        try:
            await hook.fn()
        except Exception as exc:  # noqa: BLE001 - reported, the rest still run
            _leave_if_forked(owner)
            _log_failure(hook, exc)
            return f"failed: {type(exc).__name__}: {exc}"
        _leave_if_forked(owner)
        return "ok"

    return call
