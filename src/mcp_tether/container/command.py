"""Recognising a container-run command line and rewriting it so we can follow it.

`parse_run(argv)` answers "does this command start a container process in the
foreground?" for
  docker [global options] run [options] IMAGE [ARGS...]    (also `container run`)
  docker [global options] exec [options] CONTAINER CMD...  (also `container exec`)
  podman ...                                                (any path to the engine)
  env [NAME=VALUE...] docker run ...                        (env-style prefixes)
  sh -c 'docker run ...'  / bash -c 'exec docker run ...'   (one simple command)
and returns a `RunCommand` (engine, its global options, the verb, the options read, the
image or container) or None: another program, `-d` (detached: not a stdio server),
`--help`, a `-c` string that is not one simple command (a pipeline, a list, a
substitution, a redirection: its container may be any of several).
A `-c` string is read as the shell reads words: quotes and backslashes first, so a `;`
or `|` inside quotes is part of a word (`sh -c "docker run -i IMG sh -c 'cat; sleep 9'"`
is one simple command); only an operator outside quotes makes it more than one.
`RunCommand.rewrite(extra)` returns the argv with `extra` options inserted right after
the verb (in a `-c` string: right after that word in the text, the rest untouched),
which is how the follower adds `--cidfile`, its labels or its `--env` mark.
`why_not_followed(argv)` names, in a few words, why a command that would start a
container process cannot be followed (None when it can, or starts none): the guard
says it in one warning line.
Options are read the way the engine's own parser reads them: a long option takes the
next word unless it is a known flag or spelled `--opt=value`; short options cluster
(`-it`, `-ie X=1`). Pure and stdlib-only.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

__all__ = ["RunCommand", "parse_run", "why_not_followed"]

ENGINE_NAMES = ("docker", "podman")
# `run` options that take no value (docker 20-28, podman 4-5). Anything else takes one.
_RUN_FLAGS = frozenset({
    "--detach", "--interactive", "--tty", "--rm", "--privileged", "--publish-all",
    "--init", "--read-only", "--sig-proxy", "--no-healthcheck", "--oom-kill-disable",
    "--quiet", "--disable-content-trust", "--help", "--replace", "--rmi", "--tls-verify",
    "--http-proxy", "--read-only-tmpfs", "--no-hosts", "--env-host", "--passwd",
    "--use-distro", "--rootfs",
})
_SHORT_FLAGS = frozenset("dtiPq")  # -a -c -e -h -l -m -p -u -v -w take a value
_GLOBAL_FLAGS = frozenset({"--debug", "-D", "--tls", "--tlsverify", "--remote", "-r",
                           "--help", "-h", "--version", "-v"})
_SHELLS = ("sh", "bash", "dash", "ash", "zsh", "busybox")
# Outside quotes, any of these makes a -c string more than one simple command (or a
# redirection, a subshell, a comment): not rewritten.
_OPERATORS = frozenset(";&|<>()`#\n")
# A -c string that seems to start a container process (for the warning when it cannot
# be followed): an engine word, later a verb that starts one.
_STARTS_IN_TEXT = re.compile(r"(?:^|[\s;&|(`'\"])(?:docker|podman)\b.*\b(?:run|exec|start)\b",
                             re.S)
VERBS = ("run", "exec")


def _name(word: str) -> str:
    return os.path.basename(word)


@dataclass
class RunCommand:
    """A container-run command line, taken apart."""

    argv: list[str]
    engine: str  # the engine word as written ("docker", "/usr/bin/podman")
    global_args: list[str]  # e.g. ["-H", "unix:///x.sock"]
    run_at: int  # index of the `run` word in argv (or in the -c words)
    options: list[str]  # the run options as given, up to the image
    image: str | None  # for `exec`: the container, as named
    words: list[str]  # the option words, values left out
    verb: str = "run"  # "run" | "exec"
    shell_index: int | None = None  # index of the -c string in argv, for a wrapper
    inner: RunCommand | None = None  # the command inside that -c string
    text_at: int | None = None  # in a -c string: the offset right after the verb word

    def _flag(self, long: str, short: str | None = None) -> bool:
        for opt in self.words:
            if opt == long or opt.startswith(long + "=") and opt != long + "=false":
                return True
            if short and opt.startswith("-") and not opt.startswith("--"):
                for ch in opt[1:]:  # a cluster: flags until the first option with a value
                    if ch == short:
                        return True
                    if ch not in _SHORT_FLAGS:
                        break
        return False

    def _value(self, long: str) -> str | None:
        for i, opt in enumerate(self.options):
            if opt == long and i + 1 < len(self.options):
                return self.options[i + 1]
            if opt.startswith(long + "="):
                return opt.partition("=")[2]
        return None

    @property
    def interactive(self) -> bool:
        return self._flag("--interactive", "i")

    @property
    def detached(self) -> bool:
        return self._flag("--detach", "d")

    @property
    def remove(self) -> bool:
        return self._flag("--rm")

    @property
    def sig_proxy(self) -> bool:
        """Does the engine client relay the signals it gets to the container? (Default
        yes for `run`; `--sig-proxy=false` turns it off. Never for `exec`: the exec'd
        process keeps running whatever its client gets.)"""
        if self.verb == "exec":
            return False
        value = self._value("--sig-proxy")
        return value is None or value.lower() not in ("false", "0")

    @property
    def cidfile(self) -> str | None:
        return self._value("--cidfile")

    def rewrite(self, extra: list[str]) -> list[str]:
        """argv with `extra` inserted right after the `run` word."""
        if self.shell_index is not None:
            text = self.argv[self.shell_index]
            assert self.text_at is not None  # parse_run found the verb's word
            added = " " + " ".join(shlex.quote(w) for w in extra)
            out = list(self.argv)
            out[self.shell_index] = text[: self.text_at] + added + text[self.text_at:]
            return out
        at = self.run_at + 1
        return [*self.argv[:at], *extra, *self.argv[at:]]


def _skip_env(argv: list[str]) -> int:
    """Index of the first word after an `env [-i] [NAME=VALUE...]` or `exec` prefix."""
    i = 0
    while i < len(argv):
        base = _name(argv[i])
        if base in ("env", "exec", "command") and i + 1 < len(argv):
            i += 1
            while i < len(argv) and (argv[i] in ("-i", "--ignore-environment", "--")
                                     or ("=" in argv[i] and not argv[i].startswith("-"))):
                i += 1
            continue
        return i
    return i


def _parse_engine(argv: list[str], at: int) -> RunCommand | None:
    """argv[at] is the engine word: read globals, `run`, the run options, the image."""
    i = at + 1
    global_args: list[str] = []
    while i < len(argv) and argv[i].startswith("-"):
        word = argv[i]
        if word in ("--help", "-h", "--version", "-v"):
            return None
        global_args.append(word)
        if word not in _GLOBAL_FLAGS and "=" not in word:
            if i + 1 >= len(argv):
                return None
            global_args.append(argv[i + 1])
            i += 1
        i += 1
    if i < len(argv) and argv[i] == "container":
        i += 1
    if i >= len(argv) or argv[i] not in VERBS:
        return None
    verb = argv[i]
    run_at = i
    i += 1
    options: list[str] = []
    words: list[str] = []
    image = None
    while i < len(argv):
        word = argv[i]
        if word == "--":
            i += 1
            break
        if not word.startswith("-") or word == "-":
            break
        options.append(word)
        words.append(word)
        if word.startswith("--"):
            takes = word not in _RUN_FLAGS and "=" not in word
        else:
            takes = False
            for k, ch in enumerate(word[1:], start=1):
                if ch not in _SHORT_FLAGS:
                    takes = k == len(word) - 1  # `-e` then its value; `-eX=1` carries it
                    break
        if takes:
            if i + 1 >= len(argv):
                return None
            options.append(argv[i + 1])
            i += 1
        i += 1
    if i < len(argv):
        image = argv[i]
    if image is None or "--help" in options or (verb == "exec" and i + 1 >= len(argv)):
        return None
    cmd = RunCommand(argv, argv[at], global_args, run_at, options, image, words, verb=verb)
    return None if cmd.detached else cmd


def _shell_words(text: str) -> list[tuple[str, int]] | None:
    """The words of a `-c` string that is one simple command, each with the offset
    just past it; None for anything else (see the module doc). Quotes and backslashes
    are read as the shell reads them; `$(...)` and backquotes, even inside double
    quotes, run another command and make it more than one."""
    out: list[tuple[str, int]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i] in " \t":
            i += 1
            continue
        start = i
        while i < n and text[i] not in " \t":
            c = text[i]
            if c == "'":
                end = text.find("'", i + 1)
                if end < 0:
                    return None
                i = end + 1
            elif c == '"':
                i += 1
                while i < n and text[i] != '"':
                    if text[i] == "\\":
                        i += 1
                    elif text[i] == "`" or text.startswith("$(", i):
                        return None
                    i += 1
                if i >= n:
                    return None
                i += 1
            elif c == "\\":
                i += 2
            elif c in _OPERATORS or text.startswith("$(", i):
                return None
            else:
                i += 1
        try:
            word = shlex.split(text[start:i])
        except ValueError:
            return None
        if len(word) != 1:
            return None
        out.append((word[0], i))
    return out


def _shell_text(argv: list[str], at: int) -> int | None:
    """Index of the `-c` string when argv[at] is a shell run as `sh -c TEXT ...`."""
    if _name(argv[at]) not in _SHELLS:
        return None
    j = at + 1
    if _name(argv[at]) == "busybox" and j < len(argv) and argv[j] == "sh":
        j += 1
    if j + 1 < len(argv) and argv[j] == "-c":
        return j + 1
    return None


def parse_run(argv: list[str]) -> RunCommand | None:
    """The foreground container run (or exec) `argv` spells, or None; see the module doc."""
    argv = list(argv)
    at = _skip_env(argv)
    if at >= len(argv):
        return None
    if _name(argv[at]) in ENGINE_NAMES:
        return _parse_engine(argv, at)
    k = _shell_text(argv, at)
    if k is None:
        return None
    spans = _shell_words(argv[k])
    if spans is None:
        return None
    inner = parse_run([w for w, _end in spans])
    if inner is None or inner.shell_index is not None:
        return None
    return RunCommand(argv, inner.engine, inner.global_args, inner.run_at, inner.options,
                      inner.image, inner.words, verb=inner.verb, shell_index=k, inner=inner,
                      text_at=spans[inner.run_at][1])


def why_not_followed(argv: list[str]) -> str | None:
    """Why a command that would start a container process cannot be followed, in a few
    words; None when it can be (`parse_run` reads it) or when it starts none."""
    if parse_run(argv) is not None:
        return None
    at = _skip_env(list(argv))
    if at >= len(argv):
        return None
    if _name(argv[at]) in ENGINE_NAMES:
        rest = [w for w in argv[at + 1:] if not w.startswith("-")]
        verb = next((w for w in rest if w != "container"), "")
        if verb in VERBS:
            if any(w in ("--help", "-h") for w in argv[at + 1:]):
                return None
            return f"`{verb} -d` detaches it (or its options are not read)"
        if verb in ("start", "attach", "compose"):
            return f"`{_name(argv[at])} {verb}` is not followed"
        return None
    k = _shell_text(argv, at)
    if k is not None and _STARTS_IN_TEXT.search(argv[k]):
        return "its -c string is not one simple command"
    return None
