"""Ports of the host: how a feature rides on generations without the host knowing it.

A `HostExtension` is handed to `Host(extensions=...)` by the composition root
(or registered by the feature the first time it is used, `Host.extension`).
Every hook has a no-op default, so a feature overrides only what it needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["HostExtension"]


class HostExtension:
    """A feature that rides on kernel generations (the worktrees of isolated writers)."""

    async def work_done(self, run_id: str, summary: str) -> str | None:
        """The run's assignment may finish with `summary`; its result is stored next.

        Returns:
            A line appended to the result text, or `None`.
        """
        return None

    async def result_details(self, run_id: str) -> Mapping[str, object] | None:
        """Fields the run's delivered result adds to its details, or `None`."""
        return None

    async def lead_attached(self, lead_session_id: str) -> Sequence[str]:
        """A lead attached (start or resume): settle what a crash left; warnings for the front end."""
        return ()
