"""The backends behind `mcp_tether.platform`: one module per set of OS primitives.

`platform.py` imports exactly one of them, once (`linux` or `portable`); nothing else
imports them. `record` holds the one process record every backend fills in.

The contract every backend module keeps (same names, same meanings):

- `NAME`; `HAS_PIDFD`; `HAS_SUBREAPER`; `WATCHES_BEYOND_PARENT` (a process can watch
  its host past an intermediate parent, so the guard may fork a front); `SOCKET_HANGUP` (poll events
  that show a socket peer's half-close; 0 where poll cannot tell).
- `load`, `prctl`, `set_subreaper`, `is_subreaper`, `set_pdeathsig`: False where the OS
  has no such thing (then callers use their portable strategy: group + scan).
- `pidfd_open(pid)`: a descriptor pinning `pid`, or None (no pidfds: re-check identity
  right before kill(2), poll for exits); ProcessLookupError when there is no such process.
- `read(pid)` (zombies included), `read_record(pid, want_argv)`, `fill(out, want_argv)`
  (live processes only), `pids()`, `read_argv`, `read_link`, `owner`, `clock`,
  `age_seconds`: the process table as `record.ProcRecord`s. None means gone;
  PermissionError means present but unreadable (unknown, never gone).
- `run_delay(pid)`, `last_pid()`, `PID_MAX`, `is_process(pid)`, `children(pid)`,
  `holds(pid, keys)`, `terminal(pid)` (its controlling terminal, 0 for none): None where
  the backend cannot know.
- `boot_paths()`: folders a fresh `python -S` (the probe's keeper) must put on sys.path
  to load this backend's dependencies.
- `channels()`: the module answering fd links, fd modes, pipe peers, fd info, holders
  and sock_diag (`CHANNEL_DETAIL` False: every answer is "unknown"); `environ(pid)`;
  `endpoints(pid)` (the pseudo-terminal masters, pipes and sockets a process holds, each
  with its far end) and `endpoint_holders(links)` (who holds each): what the tree kill
  reads to leave a user's processes (`proc.leave`); None where it cannot be seen.
- `boot_id()`: a name for this boot that another boot never has (Linux: the kernel's
  random boot id), or None: what ties a file of observations to the boot it was made in.
- `reopen(fd, write)`: a fresh end of the pipe behind our own `fd`, or None.
- `signal_masks(pid)`, `wait_channel(pid, tid)`, `threads(pid, limit)`,
  `pid_namespace(pid)`, `cgroup(pid)`, `cgroup_memory(pid)`, `mapped_files(pid)`: what a
  process is doing and where it lives, for evidence and `inspect`; None where the
  backend cannot know (callers then say nothing, never "none").
- `running_tasks()`, `running_threads(pid)`: runnable tasks on the whole machine, and
  of one process (its threads in state R), now; None where the backend cannot know
  (the survey then cannot tell its own load from other work's).
"""

import os


def has_procfs() -> bool:
    """Linux's /proc is mounted here: what the `linux` backend reads."""
    return os.path.exists("/proc/self/stat")
