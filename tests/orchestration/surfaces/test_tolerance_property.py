"""Property: empty values for any field an action does not use never change what reaches the controller."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from corral.orchestration.surfaces import ACTION_FIELDS, ACTIONS, parse_action

from .test_params import OK_ARGS

ALL_FIELDS = sorted({f for fields in ACTION_FIELDS.values() for f in fields})
EMPTY = st.sampled_from([None, "", [], {}])


@settings(max_examples=200, deadline=None)
@given(action=st.sampled_from(ACTIONS), extras=st.dictionaries(st.sampled_from(ALL_FIELDS), EMPTY))
def test_empty_unused_fields_are_absent(action: str, extras: dict[str, Any]) -> None:
    required = set(OK_ARGS[action])
    noise = {k: v for k, v in extras.items() if k not in required}
    with_noise = parse_action({"action": action, **noise, **OK_ARGS[action]})
    clean = parse_action({"action": action, **OK_ARGS[action]})
    assert with_noise == clean


@settings(max_examples=100, deadline=None)
@given(action=st.sampled_from(ACTIONS), name=st.text(min_size=1, max_size=12), value=EMPTY)
def test_fields_no_action_knows_are_rejected_even_when_empty(action: str, name: str, value: Any) -> None:
    from corral.orchestration.errors import InvalidRequestError

    if name in ALL_FIELDS or name == "action":
        return
    try:
        parse_action({"action": action, **OK_ARGS[action], name: value})
    except InvalidRequestError as exc:
        assert f"unknown field {name}" in exc.message
    else:
        raise AssertionError(f"unknown field {name!r} was accepted")
