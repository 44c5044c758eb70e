"""Recognising a container-run command line and rewriting it so we can follow it.

`parse_run(argv)` answers "does this command start a container in the foreground?" for
  docker [global options] run [options] IMAGE [ARGS...]   (also `container run`)
  podman [global options] run ...                          (any path to the engine)
  env [NAME=VALUE...] docker run ...                       (env-style prefixes)
  sh -c 'docker run ...'  / bash -c 'exec docker run ...'  (a simple -c string)
and returns a `RunCommand` (engine, its global options, the run options read, the
image) or None: another program, `run -d` (detached: not a stdio server), `--help`, a
`-c` string that is a pipeline or a list (its docker run may be any of several).
`RunCommand.rewrite(extra)` returns the argv with `extra` options inserted right after
the `run` word (in a `-c` string: right after it in the text, the rest untouched), which
is how the follower adds `--cidfile` and its labels.
Options are read the way the engine's own parser reads them: a long option takes the
next word unless it is a known flag or spelled `--opt=value`; short options cluster
(`-it`, `-ie X=1`). Pure and stdlib-only.
"""

from __future__ import annotations

import os
import re

__all__ = ["RunCommand", "parse_run"]

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
# A -c string we dare rewrite: no pipes, lists, substitutions or redirections.
_SHELL_SPECIAL = re.compile(r"[;&|`<>()\n]|\$\(")
_RUN_IN_TEXT = re.compile(r"(?:^|\s)(?:run|container\s+run)(?=\s|$)")


def _name(word: str) -> str:
    return os.path.basename(word)


class RunCommand:
    """A container-run command line, taken apart."""

    def __init__(self, argv: list[str], engine: str, global_args: list[str],
                 run_at: int, options: list[str], image: str | None,
                 shell_index: int | None = None, inner: RunCommand | None = None,
                 words: list[str] | None = None) -> None:
        self.argv = argv
        self.engine = engine  # the engine word as written ("docker", "/usr/bin/podman")
        self.global_args = global_args  # e.g. ["-H", "unix:///x.sock"]
        self.run_at = run_at  # index of the `run` word in argv (or in the -c words)
        self.options = options  # the run options as given, up to the image
        self.image = image
        self.shell_index = shell_index  # index of the -c string in argv, for a wrapper
        self.inner = inner  # the command inside that -c string
        self.words = options if words is None else words  # option words, values left out

    def __repr__(self) -> str:
        return (f"RunCommand(engine={self.engine!r}, image={self.image!r}, "
                f"options={self.options!r}, shell={self.shell_index is not None})")

    @property
    def engine_name(self) -> str:
        return _name(self.engine)

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
        yes; `--sig-proxy=false` turns it off.)"""
        value = self._value("--sig-proxy")
        return value is None or value.lower() not in ("false", "0")

    @property
    def cidfile(self) -> str | None:
        return self._value("--cidfile")

    def rewrite(self, extra: list[str]) -> list[str]:
        """argv with `extra` inserted right after the `run` word."""
        if self.shell_index is not None:
            import shlex

            text = self.argv[self.shell_index]
            m = _RUN_IN_TEXT.search(text)
            assert m is not None  # parse_run found it
            added = " " + " ".join(shlex.quote(w) for w in extra)
            out = list(self.argv)
            out[self.shell_index] = text[: m.end()] + added + text[m.end():]
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
    if i >= len(argv) or argv[i] != "run":
        return None
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
    if image is None or "--help" in options:
        return None
    cmd = RunCommand(argv, argv[at], global_args, run_at, options, image, words=words)
    return None if cmd.detached else cmd


def parse_run(argv: list[str]) -> RunCommand | None:
    """The foreground container run `argv` spells, or None; see the module doc."""
    argv = list(argv)
    at = _skip_env(argv)
    if at >= len(argv):
        return None
    base = _name(argv[at])
    if base in ENGINE_NAMES:
        return _parse_engine(argv, at)
    if base in _SHELLS:
        j = at + 1
        if base == "busybox" and j < len(argv) and argv[j] == "sh":
            j += 1
        if j + 1 < len(argv) and argv[j] == "-c":
            text = argv[j + 1]
            if _SHELL_SPECIAL.search(text) or not _RUN_IN_TEXT.search(text):
                return None
            import shlex

            try:
                words = shlex.split(text)
            except ValueError:
                return None
            inner = parse_run(words)
            if inner is None or inner.shell_index is not None:
                return None
            return RunCommand(argv, inner.engine, inner.global_args, inner.run_at,
                              inner.options, inner.image, shell_index=j + 1, inner=inner,
                              words=inner.words)
    return None
