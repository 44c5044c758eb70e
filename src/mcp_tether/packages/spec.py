"""Package specs: `npm:NAME[@VERSION]`, `pypi:NAME[==VERSION]`, or a local path after either.

    parse_spec("npm:@modelcontextprotocol/server-memory@2026.8.31")
    -> PackageSpec(ecosystem="npm", name="@modelcontextprotocol/server-memory",
                   version="2026.8.31", path=None)

Guarantees: a pure function of the text; every malformed spec is a `UsageError` (exit 2)
naming what is wrong; `is_package_spec` answers without raising, so a command line whose
first word merely starts with `npm`/`pypi` (the `npm` binary itself) is not taken for one.
Local paths (`npm:./server.tgz`, `pypi:/tmp/x.whl`, any path starting `.`, `/` or `~`)
name a tarball, wheel, sdist or folder to install instead of a registry package.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from mcp_tether.errors import UsageError

__all__ = ["NPM", "PYPI", "ECOSYSTEMS", "FORMS", "PackageSpec", "InstallPolicy", "parse_spec",
           "is_package_spec"]

NPM = "npm"
PYPI = "pypi"
ECOSYSTEMS = (NPM, PYPI)

# npm's rules (validate-npm-package-name): lower-case for new packages, url-safe, an
# optional @scope/. PyPI's (PEP 508 names): letters, digits, `.-_`, alnum at both ends.
_NPM_NAME = re.compile(r"^(@[a-z0-9][a-z0-9._~-]*/)?[a-z0-9][a-z0-9._~-]*$", re.I)
_PYPI_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?(\[[A-Za-z0-9._,-]+\])?$")
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+_-]*$")
FORMS = ("npm:NAME[@VERSION], npm:@SCOPE/NAME[@VERSION], pypi:NAME[==VERSION], or npm:/pypi: "
         "and a local path (./dir, /x.tgz, ~/x.whl)")


@dataclass(frozen=True)
class InstallPolicy:
    """What installing a package may run besides the server itself.

    Installing is running code: npm runs each package's preinstall/install/postinstall
    scripts, pip runs an sdist's build backend. Neither runs by default: npm installs with
    `--ignore-scripts`, pip with `--only-binary :all:` (wheels only). Some servers need
    them (a native module compiled or a browser downloaded at install time): the caller
    says so with `scripts` / `build`. The cache keeps each kind in a folder of its own,
    so a scripted install is never reused for an unscripted run, nor the reverse.
    """

    scripts: bool = False  # npm: run install scripts
    build: bool = False  # pypi: build source distributions

    def folder(self, ecosystem: str) -> str:
        """The cache folder for this ecosystem and choice."""
        if ecosystem == NPM:
            return "npm-scripts" if self.scripts else "npm-ignore-scripts"
        return "pypi-build" if self.build else "pypi-wheels"


@dataclass(frozen=True)
class PackageSpec:
    ecosystem: str  # "npm" or "pypi"
    name: str  # registry name (pypi: may carry [extras]); for a local path, its base name
    version: str | None = None  # exact version pinned, None: the newest
    path: str | None = None  # a local tarball / wheel / sdist / folder, absolute

    @property
    def text(self) -> str:
        """The spec as a user writes it (what tables and errors show)."""
        if self.path:
            return f"{self.ecosystem}:{self.path}"
        if self.version is None:
            return f"{self.ecosystem}:{self.name}"
        sep = "@" if self.ecosystem == NPM else "=="
        return f"{self.ecosystem}:{self.name}{sep}{self.version}"

    @property
    def requirement(self) -> str:
        """What the ecosystem's installer is given: `name@1.2`, `name==1.2`, a path."""
        if self.path:
            return self.path
        if self.version is None:
            return self.name
        return f"{self.name}@{self.version}" if self.ecosystem == NPM else \
            f"{self.name}=={self.version}"


def is_package_spec(text: str) -> bool:
    """Does `text` ask for a package (`npm:...` / `pypi:...`, even an empty or malformed
    one, which `parse_spec` then refuses)? Never raises. `npm` alone is a command."""
    eco, sep, _ = text.partition(":")
    return bool(sep) and eco in ECOSYSTEMS


def _is_path(rest: str) -> bool:
    return rest.startswith((".", "/", "~"))


def _bad(text: str, what: str) -> UsageError:
    """One line: what is wrong with the spec, and the forms that are accepted."""
    return UsageError(f"{text!r}: {what}; a package spec is {FORMS}")


def parse_spec(text: str) -> PackageSpec:
    eco, sep, rest = text.partition(":")
    if not sep or eco not in ECOSYSTEMS:
        raise _bad(text, "is not a package spec")
    rest = rest.strip()
    if not rest:
        raise _bad(text, "names no package")
    if _is_path(rest):
        path = os.path.abspath(os.path.expanduser(rest))
        if not os.path.exists(path):
            raise UsageError(f"{text}: {path}: no such file or directory")
        return PackageSpec(eco, os.path.basename(path.rstrip("/")), None, path)
    if rest.startswith("-"):
        # Checked before any `=` is read as a range: `pypi:--index-url=x` is an installer
        # option smuggled in as a name, not a package with a loose version.
        raise _bad(text, f"{rest!r} is not a package name (a name never starts with `-`)")
    if eco == NPM:
        at = rest.rfind("@")
        name, version = (rest[:at], rest[at + 1:]) if at > 0 else (rest, None)
        if not _NPM_NAME.match(name):
            raise _bad(text, f"{name!r} is not an npm package name")
    else:
        name, version = rest, None
        for op in ("==", "@"):
            if op in rest:
                name, _, version = rest.partition(op)
                break
        else:
            if any(c in rest for c in "<>=!~"):
                raise _bad(text, "pin an exact version with `==` (ranges are not "
                           "reproducible)")
        name = name.strip()
        if not _PYPI_NAME.match(name):
            raise _bad(text, f"{name!r} is not a PyPI project name")
    if version is not None:
        version = version.strip()
        if not version:
            # `npm:foo@` / `pypi:foo==` may be a version cut off in a script; the newest
            # would be a guess, so only the bare name or `latest` asks for it.
            raise _bad(text, "names no version after the separator (drop it for the newest)")
        if version == "latest":
            version = None
        elif not _VERSION.match(version):
            raise _bad(text, f"{version!r} is not an exact version (ranges and tags other "
                       "than `latest` are not reproducible)")
    return PackageSpec(eco, name, version, None)
