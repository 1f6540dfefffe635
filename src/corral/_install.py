"""What to tell a user whose corral lacks an optional extra (`mcp`, `ray`, `otel`).

corral is installed from a checkout or a built wheel (README "Install"), not from a package
registry, so the advice names the ways that work: reinstall with the extra, or add the extra's own
packages to the Python that runs corral. The packages and their versions come from corral's own
metadata, so the hint never drifts from pyproject.toml.
"""

from __future__ import annotations

import re
import sys

__all__ = ["extra_requirements", "missing_extra"]


def extra_requirements(extra: str) -> list[str]:
    """The requirement strings corral's metadata lists for `extra` (empty when unknown)."""
    from importlib.metadata import PackageNotFoundError, requires

    try:
        listed = requires("corral") or []
    except PackageNotFoundError:
        return []
    marker = re.compile(r"""extra\s*==\s*["']""" + re.escape(extra) + """["']""")
    return [
        req.split(";", 1)[0].strip() for req in listed if ";" in req and marker.search(req.split(";", 1)[1])
    ]


def missing_extra(extra: str, needed_for: str) -> str:
    """One line: `needed_for` needs the `extra` extra, and how to install it.

    Args:
        extra: The extra's name in pyproject.toml (`mcp`, `ray`, `otel`).
        needed_for: What needs it, as the start of the sentence (`corral mcp needs the MCP SDK`).
    """
    packages = " ".join(f"'{req}'" for req in extra_requirements(extra)) or f"corral's {extra} extra"
    return (
        f"{needed_for}: install corral with its {extra} extra (from a checkout: `make install`, or "
        f"`uv tool install --force '.[{extra}]'`), or add it to this Python: "
        f"{sys.executable} -m pip install {packages}"
    )
