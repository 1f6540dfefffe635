"""Intent tiers (`model_slot`): the eight canonical tiers, legacy aliases, favorites, resolution.

A spawn names a tier, never a model. The tier's prefix fixes the kind of
agent (`read-*` → a read agent, `write-*` → an edit agent); the model and
thinking level come from the user's favorite for that tier, and an unset tier
inherits the lead's current model and thinking level. Spawns that pass
`model`, `thinking` or `role` are rejected (`check_spawn_fields`).

Thinking levels follow corral's substrate, which has no `max` level: a
favorite that says `max` is read as `xhigh`, and then every level is clamped
to what the model offers with `corral.llm.clamp_thinking_level` (the level
itself if offered, else the nearest higher, else the nearest lower; a model
without reasoning gets `off`). That is the teams notes' §2.3 rule with `max`
mapped onto the highest level corral has.

Favorites live only in the user settings (never the project's), so the
picker and spawning agree; `TierFavorites` is the typed table the settings
hold, keyed by canonical tier (aliases are accepted and projected).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal, Protocol, cast

from pydantic import BaseModel, ConfigDict, Field, RootModel, field_validator, model_validator

from corral.llm import (
    THINKING_LEVELS,
    LlmError,
    ModelInfo,
    ThinkingLevel,
    clamp_thinking_level,
    parse_model_ref,
)

from ._errors import SpawnFieldsError, TierModelError, UnknownTierError

__all__ = [
    "DEFAULT_TIER",
    "FORBIDDEN_SPAWN_FIELDS",
    "HELPER_TIERS",
    "TIERS",
    "TIER_ALIASES",
    "ModelResolver",
    "ModelSource",
    "Tier",
    "TierFavorite",
    "TierFavorites",
    "TierKind",
    "TierModel",
    "TierName",
    "can_spawn_nested_helpers",
    "check_spawn_fields",
    "check_swarm_fields",
    "resolve_helper_tier",
    "resolve_tier",
    "resolve_tier_model",
]

TierName = Literal[
    "read-collect",
    "read-review",
    "read-analyze",
    "read-critical",
    "write-patch",
    "write-feature",
    "write-system",
    "write-critical",
]
"""A canonical tier name."""

TierKind = Literal["read", "edit"]
"""What a tier's agent may do: `read` (read-only, enforced where the sandbox works) or `edit`."""

ModelSource = Literal["favorite", "lead"]
"""Where a resolved tier model came from: the tier's favorite, or the lead's current model."""


@dataclass(frozen=True, slots=True)
class Tier:
    """One canonical intent tier."""

    name: TierName
    """Canonical name, such as `read-review`."""
    kind: TierKind
    """`read` for `read-*` tiers, `edit` for `write-*` tiers."""
    purpose: str
    """The work the tier is for (shown to the lead)."""
    default_thinking: ThinkingLevel
    """Calibrated thinking level used when a favorite names a model but no level."""
    nests_helpers: bool = False
    """Whether a depth-0 agent of this tier may get nested read helpers (with explicit opt-in)."""

    @property
    def role(self) -> Literal["read", "write"]:
        """The public role string: `read` or `write`."""
        return "read" if self.kind == "read" else "write"

    @property
    def helper_eligible(self) -> bool:
        """Whether nested read helpers may use this tier (canonical `read-*` only)."""
        return self.kind == "read"


def _tiers(*tiers: Tier) -> Mapping[TierName, Tier]:
    return MappingProxyType({tier.name: tier for tier in tiers})


TIERS: Mapping[TierName, Tier] = _tiers(
    Tier(
        "read-collect",
        "read",
        "Bounded facts, logs, inventories, or test output; does not own the conclusion.",
        "high",
    ),
    Tier("read-review", "read", "Normal review, verification, and test-gap work (the default).", "xhigh"),
    Tier("read-analyze", "read", "Root-cause analysis across connected evidence.", "medium"),
    Tier(
        "read-critical",
        "read",
        "Rare high-stakes security, architecture, concurrency, migration, or data reasoning.",
        "xhigh",
    ),
    Tier("write-patch", "edit", "A narrow documentation, config, fixture, or bug fix.", "xhigh"),
    Tier("write-feature", "edit", "A bounded feature with a known design.", "medium", nests_helpers=True),
    Tier("write-system", "edit", "A cross-cutting integration or refactor inside claimed files.", "high"),
    Tier(
        "write-critical",
        "edit",
        "Rare high-risk security, concurrency, recovery, migration, or data-integrity work.",
        "xhigh",
        nests_helpers=True,
    ),
)
"""The eight canonical tiers, in the contract's order."""

TIER_ALIASES: Mapping[str, TierName] = MappingProxyType(
    {
        "reading-fast": "read-collect",
        "reading-default": "read-review",
        "reading-hard": "read-critical",
        "writing-basic": "write-patch",
        "writing-hard": "write-system",
    }
)
"""Legacy tier names, accepted at every public boundary and projected to the canonical name."""

DEFAULT_TIER: TierName = "read-review"
"""The tier a spawn gets when it names none."""

HELPER_TIERS: tuple[TierName, ...] = ("read-collect", "read-review", "read-analyze", "read-critical")
"""The tiers a nested read helper may use (canonical names only, no aliases)."""

FORBIDDEN_SPAWN_FIELDS: tuple[str, ...] = ("model", "thinking", "role")
"""Spawn fields that are rejected: the tier alone chooses the model."""


def _canonical_list() -> str:
    return ", ".join(TIERS)


def resolve_tier(name: object) -> Tier:
    """The tier for a canonical name or a legacy alias.

    Args:
        name: The `model_slot` value (surrounding whitespace is ignored).

    Raises:
        UnknownTierError: `name` is not a tier or alias; the message lists the canonical tiers.
    """
    key = name.strip() if isinstance(name, str) else name
    if isinstance(key, str):
        tier = TIERS.get(cast(TierName, key))
        if tier is None and key in TIER_ALIASES:
            tier = TIERS[TIER_ALIASES[key]]
        if tier is not None:
            return tier
    raise UnknownTierError(f"Unknown model_slot {name!r}. Use one of: {_canonical_list()}.")


def resolve_helper_tier(name: object) -> Tier:
    """The tier for a nested read helper: a canonical `read-*` name only.

    Raises:
        UnknownTierError: `name` is an alias, a `write-*` tier or unknown.
    """
    if isinstance(name, str) and name.strip() in HELPER_TIERS:
        return TIERS[cast(TierName, name.strip())]
    raise UnknownTierError(
        f"Nested read helpers accept only canonical read tiers; got {name!r}. "
        f"Use one of: {', '.join(HELPER_TIERS)}."
    )


def can_spawn_nested_helpers(tier: Tier, *, depth: int, allow_nested_read_agents: bool) -> bool:
    """Whether an agent gets the restricted nested spawn tools.

    Only a depth-0 `write-feature` or `write-critical` agent whose spawn opted in
    with `allow_nested_read_agents: true`; helpers (depth 1) never delegate.
    """
    return depth == 0 and tier.nests_helpers and allow_nested_read_agents


def check_spawn_fields(params: Mapping[str, object], *, where: str = "spawn_agent") -> None:
    """Reject a spawn (or swarm defaults, or one swarm member) that passes `model`, `thinking` or `role`.

    Args:
        params: The parameters as given (only their keys are looked at).
        where: What the parameters belong to, named in the message.

    Raises:
        SpawnFieldsError: one of the forbidden keys is present (whatever its value).
    """
    given = [key for key in FORBIDDEN_SPAWN_FIELDS if key in params]
    if given:
        raise SpawnFieldsError(
            f"{where} must use model_slot only. Do not pass model, thinking, role (got {', '.join(given)}); "
            "choose a tier and configure its model with favorite_models."
        )


def check_swarm_fields(params: Mapping[str, object]) -> None:
    """`check_spawn_fields` for `spawn_swarm_agents`: its `defaults` and every member of `agents`.

    Non-mapping `defaults` or members are left to the surface's schema validation.

    Raises:
        SpawnFieldsError: the defaults or a member pass a forbidden key.
    """
    defaults = params.get("defaults")
    if isinstance(defaults, Mapping):
        check_spawn_fields(defaults, where="spawn_swarm_agents defaults")
    agents = params.get("agents")
    if isinstance(agents, list | tuple):
        for index, agent in enumerate(agents):
            if isinstance(agent, Mapping):
                check_spawn_fields(agent, where=f"spawn_swarm_agents agents[{index}]")


# --- favorites ---------------------------------------------------------------


class TierFavorite(BaseModel):
    """One tier's favorite: `[favorite_models.<tier>]` with `model` and optional `thinking`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    """Fully qualified `provider/model` (a `:level` suffix moves into `thinking` when that is unset)."""
    thinking: ThinkingLevel | None = None
    """Thinking level; `max` is read as `xhigh`. Unset: the tier's calibrated default."""

    @field_validator("thinking", mode="before")
    @classmethod
    def _max_is_xhigh(cls, value: Any) -> Any:
        return "xhigh" if value == "max" else value

    @model_validator(mode="before")
    @classmethod
    def _canonical_model(cls, data: Any) -> Any:
        if not isinstance(data, Mapping) or not isinstance(data.get("model"), str):
            return data
        try:
            ref = parse_model_ref(data["model"])
        except LlmError as exc:
            raise ValueError(str(exc)) from None
        out = dict(data)
        out["model"] = ref.ref
        if ref.thinking is not None and out.get("thinking") is None:
            out["thinking"] = ref.thinking
        return out


class TierFavorites(RootModel[dict[TierName, TierFavorite]]):
    """Favorites per tier, as the user settings hold them (`[favorite_models.<tier>]` tables).

    Keys are canonical tier names; legacy aliases are accepted and projected to the
    canonical name (giving both an alias and its canonical name is an error).
    """

    model_config = ConfigDict(frozen=True)

    root: dict[TierName, TierFavorite] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _project_aliases(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        out: dict[Any, Any] = {}
        for key, value in data.items():
            canonical = TIER_ALIASES.get(key, key) if isinstance(key, str) else key
            if canonical in out:
                raise ValueError(f"favorite for tier {canonical!r} is given twice (as {key!r} too)")
            out[canonical] = value
        return out

    def get(self, tier: Tier | str) -> TierFavorite | None:
        """The favorite for a tier (by `Tier`, canonical name or alias), or `None` when unset."""
        key: str = tier.name if isinstance(tier, Tier) else tier
        return self.root.get(cast(TierName, TIER_ALIASES.get(key) or key))


# --- resolution ----------------------------------------------------------------


class ModelResolver(Protocol):
    """What tier resolution needs from the lead's model registry (`corral.llm.ModelRegistry`)."""

    def resolve(self, ref: str) -> ModelInfo:
        """The registry entry for `provider/model`; raises an `LlmError` when unknown."""
        ...


@dataclass(frozen=True, slots=True)
class TierModel:
    """A tier resolved to a model and a thinking level."""

    tier: Tier
    """The canonical tier."""
    model: str
    """The model ref `provider/model`."""
    thinking: ThinkingLevel
    """The thinking level, clamped to what the model offers."""
    requested_thinking: ThinkingLevel
    """The level before clamping (the favorite's, the tier default or the lead's)."""
    source: ModelSource
    """`favorite` or `lead` (the public `modelSource`)."""
    info: ModelInfo
    """The model's registry entry."""


def resolve_tier_model(
    tier: Tier,
    favorites: TierFavorites | None,
    *,
    lead_model_ref: str | None,
    lead_thinking: ThinkingLevel,
    registry: ModelResolver,
) -> TierModel:
    """Choose the model and thinking level for a tier.

    A configured favorite wins (its `thinking`, else the tier's calibrated default);
    an unset tier inherits the lead's current model and thinking level. The level is
    then clamped to the model with `clamp_thinking_level`.

    Args:
        tier: The tier (from `resolve_tier`).
        favorites: The user's favorites, or `None` for none.
        lead_model_ref: The lead's current model (`provider/model`), if it has one.
        lead_thinking: The lead's current thinking level.
        registry: The lead's model registry; the model must be known to it.

    Raises:
        TierModelError: no favorite and no lead model, or the model is not a known
            `provider/model`.
    """
    favorite = favorites.get(tier) if favorites is not None else None
    source: ModelSource
    if favorite is not None:
        ref, requested, source = favorite.model, favorite.thinking or tier.default_thinking, "favorite"
    elif lead_model_ref:
        ref, requested, source = lead_model_ref, lead_thinking, "lead"
    else:
        raise TierModelError(
            f"No model could be resolved for model_slot {tier.name!r}: it has no favorite and the lead "
            f"has no current model. Set one in your settings.toml ([favorite_models.{tier.name}] "
            'model = "provider/model"; `corral models` lists them) or give the lead a model.'
        )
    if requested not in THINKING_LEVELS:
        raise TierModelError(
            f"model_slot {tier.name!r} has an unknown thinking level {requested!r}; "
            f"use one of {', '.join(THINKING_LEVELS)}."
        )
    try:
        parsed = parse_model_ref(ref)
        info = registry.resolve(parsed.ref)
    except LlmError as exc:
        where = "its favorite" if source == "favorite" else "the lead's model"
        raise TierModelError(
            f"model_slot {tier.name!r} resolved to unavailable model {ref!r} ({where}): {exc}"
        ) from None
    return TierModel(
        tier=tier,
        model=info.ref,
        thinking=clamp_thinking_level(info, requested),
        requested_thinking=requested,
        source=source,
        info=info,
    )
