'use strict';
// Every platform decision of the package, made once, here. No other file of the package
// reads `process.platform` (tests/test_node_layout.py says so): callers ask for a
// capability by name, and a capability this platform lacks answers `unknown` where it is
// used, never a guess.
//
// Guarantees:
// - `PROCS`: the process reader, chosen once: /proc on Linux (procfs.cjs: identity,
//   children, environment, fds, without spawning anything), `/bin/ps` on macOS and the
//   BSDs (ps.cjs: identity, parents, groups, terminals and, for this user's processes,
//   environments; no children lists, no fds), null on Windows. The tree
//   (lib/process/tree.cjs), the server's descendants (lib/terminate/descendants.cjs) and
//   what a tree kill leaves (lib/process/leave.cjs) read through it; without one they answer that they cannot
//   tell, and nothing is signalled by pid. `PROCFS` says the reader is /proc's.
// - `ANCESTRY`: how the host above this process is read and watched: `PROCS` (null on
//   Windows: no ancestry without spawning PowerShell/WMI: the host watch is off; stdin
//   EOF, the dead-pipe errors and the signals still work).
// - `POSIX`: sessions, process groups and signals to a group: the transport starts its
//   server detached (a session of its own) behind a supervisor. On Windows it starts the
//   server itself, hidden, and no supervisor is looked for.
// - `ENDPOINTS` (Linux): the reader of a process's terminals, pipes and sockets and of who
//   holds their far ends (endpoints.cjs), for what a tree kill leaves (lib/process/leave.cjs);
//   null elsewhere (macOS's ps shows no descriptors: nothing is then left for being in
//   use or a terminal, only for being kept out on purpose; unknown is no exemption).
// - `GUARD_AUTO` (Linux): `supervisor: "auto"` picks `mcp-tether run` (the Python guard, a
//   subreaper) when it is on PATH; elsewhere the Node watchdog.
// - `processClock()`: now, in seconds, on the clock this platform's process start times
//   are read on (Linux: since boot, /proc/uptime, as /proc/<pid>/stat counts; elsewhere:
//   since the epoch, as `ps` and psutil give a process's start), so that whoever reads a
//   process's start time can tell whether it started before an instant this process
//   recorded (the shutdown record's `armed.at`).
// - `INHERITED_ENV_VARS`: the environment a server gets when the host gives none (sudo's
//   list on POSIX, the SDKs' Windows list), as in both TypeScript SDK lines.

// A test switch: MCP_TETHER_TEST_PLATFORM=darwin takes macOS's path on Linux (its `ps`:
// MCP_TETHER_TEST_PS, a program printing as macOS's does, answered from /proc).
const NAME = process.env.MCP_TETHER_TEST_PLATFORM === 'darwin' ? 'darwin' : process.platform;
const LINUX = NAME === 'linux';
const WINDOWS = NAME === 'win32';

const INHERITED_ENV_VARS = WINDOWS
  ? ['APPDATA', 'COMSPEC', 'HOMEDRIVE', 'HOMEPATH', 'LOCALAPPDATA', 'PATH', 'PATHEXT',
    'PROCESSOR_ARCHITECTURE', 'PROGRAMDATA', 'PROGRAMFILES', 'PROGRAMFILES(X86)',
    'PROGRAMW6432', 'SYSTEMDRIVE', 'SYSTEMROOT', 'TEMP', 'USERNAME', 'USERPROFILE', 'WINDIR']
  : ['HOME', 'LOGNAME', 'PATH', 'SHELL', 'TERM', 'USER']; // sudo's list, as in both SDKs

/** The process reader: /proc on Linux, `ps` on macOS and the BSDs, none on Windows. */
function procs() {
  if (LINUX) return require('./procfs.cjs');
  if (WINDOWS) return null;
  return require('./ps.cjs');
}

function processClock() {
  return LINUX ? require('./procfs.cjs').uptime() : Date.now() / 1000;
}

const PROCS = procs();

module.exports = {
  NAME,
  processClock,
  PROCFS: LINUX,
  PROCS,
  ENDPOINTS: LINUX ? require('./endpoints.cjs') : null,
  ANCESTRY: PROCS,
  POSIX: !WINDOWS,
  GUARD_AUTO: LINUX,
  INHERITED_ENV_VARS,
};
