"""The permission layers of a managed agent: what narrows its `[permissions]` (docs/permissions.md).

An agent's effective policy is its parent's narrowed by its own: the settings' `[permissions]`, then
the rules of every generation from the top of its tree down to itself — a definition's
`permissions:` frontmatter, or for a teams member its tier's `[teams.tier_permissions.<tier>]`. Each
layer is checked on its own and the strictest verdict wins (`corral.hooks.ToolPolicy`), so a nested
helper gets at most what its parent got, and an `allow` in a child's definition cannot beat a deny,
an ask or the default of anything above it.

The layers are found from the generations (walking `parent_run_id`), the settings and the
definitions as they read now; an in-process agent gets them as its run starts (`PolicyExtension`), a
worker's agent in its launch (`WorkerLaunch.permissions`, added by the start step like the settings).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from corral.orchestration.kernel.records import GenerationRecord
    from corral.settings import PermissionLayer, PermissionsSettings, Settings

__all__ = ["DefinedRules", "Definitions", "LayersHost", "host_layers", "own_layer", "permission_layers"]

_log = logging.getLogger(__name__)


class DefinedRules(Protocol):
    """What the layers read of a definition (`AgentDefinition`)."""

    @property
    def permissions(self) -> PermissionsSettings | None:
        """Its `permissions:` rules, if any."""
        ...


class Definitions(Protocol):
    """What the layers read of a roster (`Roster`)."""

    def get(self, name: str) -> DefinedRules | None:
        """The definition called `name`, if any."""
        ...


class _Generations(Protocol):
    def get_generation(self, run_id: str) -> GenerationRecord | None: ...


def own_layer(
    generation: GenerationRecord, settings: Settings, roster_loader: Callable[[Path], Definitions]
) -> PermissionLayer | None:
    """The rules `generation`'s agent adds of its own: its tier's (a teams member's definition is its
    tier) or its definition's `permissions:`; `None` when it has none (or its roster cannot load)."""
    from corral.settings import PermissionLayer

    tier = settings.teams.tier_permissions.get(generation.definition)  # type: ignore[call-overload]
    if tier is not None:
        return PermissionLayer(f"tier `{generation.definition}`", tier)
    try:
        defn = roster_loader(Path(generation.cwd)).get(generation.definition)
    except Exception as exc:  # fail closed: a definition's denies must not vanish with its roster
        from corral.settings import PermissionsSettings as Rules

        _log.warning("agent definitions in %s cannot be read (%s): its calls are denied", generation.cwd, exc)
        where = f"definition `{generation.definition}` (its rules cannot be read now: {exc})"
        return PermissionLayer(where, Rules(default="deny"))
    if defn is not None and defn.permissions is not None:
        return PermissionLayer(f"definition `{generation.definition}`", defn.permissions)
    return None


def permission_layers(
    generation: GenerationRecord,
    *,
    lookup: Callable[[str], GenerationRecord | None],
    settings: Settings,
    roster_loader: Callable[[Path], Definitions],
) -> tuple[PermissionLayer, ...]:
    """The layers that narrow the agent of `generation`: its ancestors' (from the top of its tree) and
    its own, each that says something."""
    chain = [generation]
    seen = {generation.run_id}
    current = generation
    while current.parent_run_id is not None:
        parent = lookup(current.parent_run_id)
        if parent is None or parent.run_id in seen:
            break
        seen.add(parent.run_id)
        chain.append(parent)
        current = parent
    layers = (own_layer(g, settings, roster_loader) for g in reversed(chain))
    return tuple(layer for layer in layers if layer is not None and not layer.rules.empty)


class LayersHost(Protocol):
    """What `host_layers` needs of a host (`Host`)."""

    @property
    def kernel(self) -> _Generations: ...

    settings: Settings

    def roster_loader(self, cwd: Path) -> Definitions: ...


def host_layers(host: LayersHost, generation: GenerationRecord) -> tuple[PermissionLayer, ...]:
    """`permission_layers` of `generation` as `host` sees them (its store, settings and definitions)."""
    return permission_layers(
        generation,
        lookup=host.kernel.get_generation,
        settings=host.settings,
        roster_loader=host.roster_loader,
    )
