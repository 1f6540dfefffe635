"""The traces' tests need the `corral[otel]` extra: without it they skip locally, and fail under
`CI=true` (`make test` installs it)."""

from __future__ import annotations

import importlib

from tests._ci import unavailable


def require_otel(module: str = "opentelemetry.sdk", *, module_level: bool = True) -> None:
    """Skip (outside CI only) when `module` of the otel extra cannot be imported."""
    try:
        importlib.import_module(module)
    except ImportError as exc:
        unavailable(f"the corral[otel] extra is not installed ({exc})", module_level=module_level)
