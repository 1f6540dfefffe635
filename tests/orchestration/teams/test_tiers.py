"""Intent tiers: canonical names and aliases, spawn-field rejection, favorites, and model resolution."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from corral.llm import ModelRegistry
from corral.orchestration import InvalidRequestError, error_details
from corral.orchestration.teams._errors import SpawnFieldsError, TierModelError, UnknownTierError
from corral.orchestration.teams._tiers import (
    DEFAULT_TIER,
    HELPER_TIERS,
    TIER_ALIASES,
    TIERS,
    TierFavorites,
    can_spawn_nested_helpers,
    check_spawn_fields,
    check_swarm_fields,
    resolve_helper_tier,
    resolve_tier,
    resolve_tier_model,
)

CANONICAL = (
    "read-collect",
    "read-review",
    "read-analyze",
    "read-critical",
    "write-patch",
    "write-feature",
    "write-system",
    "write-critical",
)


@pytest.fixture(scope="module")
def registry() -> ModelRegistry:
    return ModelRegistry()


def test_eight_canonical_tiers_in_contract_order_with_kinds() -> None:
    assert tuple(TIERS) == CANONICAL
    for name, tier in TIERS.items():
        assert tier.name == name
        assert tier.kind == ("read" if name.startswith("read-") else "edit")
        assert tier.role == ("read" if name.startswith("read-") else "write")
    assert DEFAULT_TIER == "read-review"


def test_five_legacy_aliases_project_to_canonical() -> None:
    assert dict(TIER_ALIASES) == {
        "reading-fast": "read-collect",
        "reading-default": "read-review",
        "reading-hard": "read-critical",
        "writing-basic": "write-patch",
        "writing-hard": "write-system",
    }
    for alias, canonical in TIER_ALIASES.items():
        assert resolve_tier(alias) is TIERS[canonical]


@pytest.mark.parametrize("name", CANONICAL)
def test_resolve_tier_accepts_canonical_names(name: str) -> None:
    assert resolve_tier(name).name == name
    assert resolve_tier(f"  {name} ").name == name


@pytest.mark.parametrize("bad", ["read-fast", "READ-REVIEW", "", None, 3, "write"])
def test_unknown_tier_is_rejected_listing_canonical_tiers(bad: object) -> None:
    with pytest.raises(UnknownTierError) as info:
        resolve_tier(bad)
    message = str(info.value)
    assert message.startswith("Unknown model_slot")
    assert ", ".join(CANONICAL) in message
    assert "reading-fast" not in message
    assert isinstance(info.value, InvalidRequestError)
    assert error_details(info.value)["category"] == "invalid_request"


def test_nested_helpers_accept_canonical_read_tiers_only() -> None:
    assert CANONICAL[:4] == HELPER_TIERS
    for name in HELPER_TIERS:
        assert resolve_helper_tier(name).name == name
        assert TIERS[name].helper_eligible
    for bad in ("reading-fast", "write-patch", "write-critical", "nope"):
        with pytest.raises(UnknownTierError, match="canonical read tiers"):
            resolve_helper_tier(bad)


def test_only_depth0_feature_and_critical_writers_with_opt_in_nest_helpers() -> None:
    nesting = {
        name
        for name, tier in TIERS.items()
        if can_spawn_nested_helpers(tier, depth=0, allow_nested_read_agents=True)
    }
    assert nesting == {"write-feature", "write-critical"}
    feature = TIERS["write-feature"]
    assert not can_spawn_nested_helpers(feature, depth=0, allow_nested_read_agents=False)
    assert not can_spawn_nested_helpers(feature, depth=1, allow_nested_read_agents=True)


@pytest.mark.parametrize("field", ["model", "thinking", "role"])
def test_spawn_with_model_thinking_or_role_is_rejected(field: str) -> None:
    with pytest.raises(SpawnFieldsError) as info:
        check_spawn_fields({"model_slot": "read-review", "prompt": "x", field: None})
    message = str(info.value)
    assert message.startswith("spawn_agent must use model_slot only. Do not pass model, thinking, role")
    assert f"(got {field})" in message
    assert error_details(info.value)["category"] == "invalid_request"


def test_spawn_with_only_allowed_fields_passes() -> None:
    check_spawn_fields({"model_slot": "read-review", "prompt": "x", "name": "a", "metadata": {"model": 1}})


def test_swarm_defaults_and_each_member_are_checked() -> None:
    check_swarm_fields({"defaults": {"model_slot": "read-review"}, "agents": [{"prompt": "a"}]})
    with pytest.raises(SpawnFieldsError, match=r"^spawn_swarm_agents defaults must use model_slot only"):
        check_swarm_fields({"defaults": {"thinking": "high"}, "agents": [{"prompt": "a"}]})
    with pytest.raises(SpawnFieldsError, match=r"^spawn_swarm_agents agents\[1\] must use model_slot only"):
        check_swarm_fields({"agents": [{"prompt": "a"}, {"prompt": "b", "role": "write"}]})


# --- favorites ----------------------------------------------------------------


def test_favorites_accept_aliases_and_store_canonical_keys() -> None:
    favorites = TierFavorites.model_validate(
        {"reading-fast": {"model": "openai/gpt-5", "thinking": "low"}, "write-system": {"model": "openai/o3"}}
    )
    assert set(favorites.root) == {"read-collect", "write-system"}
    assert (
        favorites.get("read-collect") == favorites.get("reading-fast") == favorites.get(TIERS["read-collect"])
    )
    assert favorites.get("read-review") is None
    assert favorites.model_dump() == {
        "read-collect": {"model": "openai/gpt-5", "thinking": "low"},
        "write-system": {"model": "openai/o3", "thinking": None},
    }


def test_favorite_model_suffix_is_canonicalized_and_max_reads_as_xhigh() -> None:
    favorites = TierFavorites.model_validate(
        {
            "read-review": {"model": "openai/gpt-5:high"},
            "write-patch": {"model": "openai/gpt-5.2", "thinking": "max"},
        }
    )
    review = favorites.get("read-review")
    assert review is not None
    assert (review.model, review.thinking) == ("openai/gpt-5", "high")
    patch = favorites.get("write-patch")
    assert patch is not None
    assert patch.thinking == "xhigh"


@pytest.mark.parametrize(
    "data",
    [
        {"read-nope": {"model": "openai/gpt-5"}},
        {"read-review": {"model": "no-slash"}},
        {"read-review": {"model": "openai/gpt-5", "thinking": "huge"}},
        {"read-review": {"model": "openai/gpt-5", "extra": 1}},
        {"read-collect": {"model": "openai/gpt-5"}, "reading-fast": {"model": "openai/o3"}},
    ],
)
def test_bad_favorites_are_rejected(data: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        TierFavorites.model_validate(data)


# --- resolution -----------------------------------------------------------------


def test_favorite_wins_over_the_lead(registry: ModelRegistry) -> None:
    favorites = TierFavorites.model_validate({"read-review": {"model": "openai/gpt-5", "thinking": "low"}})
    resolved = resolve_tier_model(
        TIERS["read-review"],
        favorites,
        lead_model_ref="anthropic/claude-sonnet-4-5",
        lead_thinking="high",
        registry=registry,
    )
    assert (resolved.model, resolved.thinking, resolved.source) == ("openai/gpt-5", "low", "favorite")
    assert resolved.info.ref == "openai/gpt-5"


def test_unset_tier_inherits_the_lead_model_and_thinking(registry: ModelRegistry) -> None:
    favorites = TierFavorites.model_validate({"read-review": {"model": "openai/gpt-5"}})
    for favs in (favorites, None, TierFavorites()):
        resolved = resolve_tier_model(
            TIERS["write-feature"],
            favs,
            lead_model_ref="anthropic/claude-sonnet-4-5",
            lead_thinking="minimal",
            registry=registry,
        )
        assert (resolved.model, resolved.thinking, resolved.source) == (
            "anthropic/claude-sonnet-4-5",
            "minimal",
            "lead",
        )


def test_favorite_without_thinking_uses_the_tier_default(registry: ModelRegistry) -> None:
    favorites = TierFavorites.model_validate({"read-analyze": {"model": "openai/gpt-5"}})
    resolved = resolve_tier_model(
        TIERS["read-analyze"], favorites, lead_model_ref=None, lead_thinking="off", registry=registry
    )
    assert resolved.thinking == TIERS["read-analyze"].default_thinking == "medium"


def test_thinking_is_clamped_to_the_model(registry: ModelRegistry) -> None:
    favorites = TierFavorites.model_validate(
        {
            "read-review": {"model": "openai/gpt-5", "thinking": "xhigh"},  # no xhigh: nearest lower
            "read-collect": {"model": "openai/gpt-5.2", "thinking": "max"},  # has xhigh
            "read-critical": {"model": "openai/gpt-4.1", "thinking": "high"},  # no reasoning: off
        }
    )

    def resolve(tier: str) -> tuple[str, str]:
        resolved = resolve_tier_model(
            TIERS[tier],
            favorites,
            lead_model_ref=None,
            lead_thinking="off",
            registry=registry,  # type: ignore[index]
        )
        return resolved.requested_thinking, resolved.thinking

    assert resolve("read-review") == ("xhigh", "high")
    assert resolve("read-collect") == ("xhigh", "xhigh")
    assert resolve("read-critical") == ("high", "off")
    inherited = resolve_tier_model(
        TIERS["write-patch"], None, lead_model_ref="openai/gpt-4o", lead_thinking="high", registry=registry
    )
    assert inherited.thinking == "off"


def test_no_favorite_and_no_lead_model_fails(registry: ModelRegistry) -> None:
    with pytest.raises(
        TierModelError, match=r"^No model could be resolved for model_slot 'read-review'"
    ) as raised:
        resolve_tier_model(
            TIERS["read-review"], None, lead_model_ref=None, lead_thinking="off", registry=registry
        )
    # What to do, in the settings' own words.
    assert '[favorite_models.read-review] model = "provider/model"' in str(raised.value)


def test_unknown_favorite_model_fails(registry: ModelRegistry) -> None:
    favorites = TierFavorites.model_validate({"read-review": {"model": "openai/not-a-model"}})
    with pytest.raises(TierModelError, match="resolved to unavailable model 'openai/not-a-model'"):
        resolve_tier_model(
            TIERS["read-review"], favorites, lead_model_ref=None, lead_thinking="off", registry=registry
        )
    with pytest.raises(TierModelError, match="resolved to unavailable model 'nowhere/x'"):
        resolve_tier_model(
            TIERS["read-review"], None, lead_model_ref="nowhere/x", lead_thinking="off", registry=registry
        )
