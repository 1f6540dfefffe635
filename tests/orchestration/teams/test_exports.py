"""`corral.orchestration.teams.__all__` names exactly the package's public names (tiers, capacity, …)."""

from __future__ import annotations

import corral.orchestration.teams as teams


def test_all_is_sorted_and_matches_public_names() -> None:
    exported = list(teams.__all__)
    assert exported == sorted(exported, key=lambda name: (not name.isupper(), name))
    missing = [name for name in exported if not hasattr(teams, name)]
    assert missing == []
    public = {
        name
        for name, value in vars(teams).items()
        if not name.startswith("_") and getattr(value, "__module__", "").startswith(teams.__name__ + ".")
    }
    assert public <= set(exported)
