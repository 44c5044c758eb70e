"""The install-policy options every command that installs packages takes, in one place.

`--allow-scripts` (npm: run the tree's install scripts) and `--allow-build` (PyPI: build
source distributions); without them nothing of the package runs while it installs
(`InstallPolicy`). `probe`, `inspect` and `survey` share these, so their help and their
refusals read alike.
"""

from __future__ import annotations

import argparse

from mcp_tether.errors import UsageError
from mcp_tether.packages.spec import NPM, PYPI, InstallPolicy, PackageSpec

__all__ = ["add_policy_options", "policy_from"]


def add_policy_options(group: argparse._ActionsContainer) -> None:
    group.add_argument("--allow-scripts", action="store_true",
                       help="npm: run the packages' install scripts (default: npm "
                       "--ignore-scripts; some servers need them: a native binary, a "
                       "browser download)")
    group.add_argument("--allow-build", action="store_true",
                       help="PyPI: let pip build source distributions (default: wheels "
                       "only, --only-binary :all:)")


def policy_from(args: argparse.Namespace, spec: PackageSpec | None = None) -> InstallPolicy:
    """The policy the options ask for; with `spec`, an option for the other ecosystem is a
    usage error rather than silently doing nothing."""
    scripts, build = bool(getattr(args, "allow_scripts", False)), \
        bool(getattr(args, "allow_build", False))
    if spec is not None and scripts and spec.ecosystem == PYPI:
        raise UsageError("--allow-scripts is for npm: packages (a PyPI package builds with "
                         "--allow-build)")
    if spec is not None and build and spec.ecosystem == NPM:
        raise UsageError("--allow-build is for pypi: packages (npm install scripts run with "
                         "--allow-scripts)")
    return InstallPolicy(scripts=scripts, build=build)
