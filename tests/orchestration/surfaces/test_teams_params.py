"""Teams tool parameters: every rule, default and error text, and schemas that agree with the parsers.

These are unit tests of the parsing layer on purpose: each rule is a pure function of the
arguments, and the tool-level tests (the lead's) only need to know that a parse error
reaches the model as `invalid_request`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from corral.agent import validate_tool_arguments
from corral.orchestration.errors import InvalidRequestError, error_details
from corral.orchestration.surfaces.teams._wire import (
    LEAD_RECIPIENT,
    MAX_EVIDENCE_CHARS,
    MAX_INSPECTED_EVIDENCE,
    NAME_MAX_LENGTH,
    TASK_OUTCOMES,
    TEAMS_SCHEMAS,
    AgentNameRequest,
    Artifact,
    ClaimRequest,
    Finding,
    ReadInboxRequest,
    ReportSubmission,
    SendMessageRequest,
    SpawnRequest,
    StatusRequest,
    StopRequest,
    parse_agent_name,
    parse_claim,
    parse_list_claims,
    parse_nested_spawn,
    parse_nested_swarm,
    parse_read_inbox,
    parse_report,
    parse_send_message,
    parse_spawn,
    parse_status,
    parse_stop,
    parse_swarm,
)
from corral.orchestration.teams._errors import SpawnFieldsError, UnknownTierError
from corral.orchestration.teams._tiers import HELPER_TIERS, TIER_ALIASES, TIERS
from corral.orchestration.teams.checkpoints.records import parse_checkpoint_policy
from corral.orchestration.teams.checks._checks import parse_check_policy
from corral.orchestration.teams.commands import Parsed, RepairPolicy
from corral.orchestration.teams.groups._groups import parse_completion_group

NAME_ERROR = "Only alphanumeric characters, hyphens, and underscores are allowed."


def fails(call: Callable[[], object], *words: str, kind: type[Exception] = InvalidRequestError) -> str:
    """Run `call`, expect `kind`, check the message is one line holding `words`; return it."""
    with pytest.raises(kind) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    for word in words:
        assert word in message
    return message


# --- spawn_agent -------------------------------------------------------------------


def test_spawn_defaults() -> None:
    assert parse_spawn({"prompt": "Review the diff."}) == SpawnRequest(
        "Review the diff.", "read-review", "read-review"
    )


def test_spawn_every_field_is_carried() -> None:
    request = parse_spawn(
        {
            "prompt": "  Fix it.  ",
            "model_slot": "write-feature",
            "name": "fixer_1",
            "cwd": "sub/dir",
            "session_context": "lazy",
            "metadata": {"operationId": "op-1"},
            "allow_nested_read_agents": True,
            "checks": [{"name": "t", "command": "true", "timeoutSeconds": 5}],
            "repair": {"maxAttempts": 1},
            "checkpoint": {"inputs": ["src"]},
            "continue_from": "checkpoint:" + "a" * 64,
        }
    )
    assert request == SpawnRequest(
        "  Fix it.  ",
        "write-feature",
        "write-feature",
        name="fixer_1",
        cwd="sub/dir",
        session_context="lazy",
        metadata={"operationId": "op-1"},
        allow_nested_read_agents=True,
        checks=Parsed(parse_check_policy([{"name": "t", "command": "true", "timeoutSeconds": 5}])),
        repair=Parsed(RepairPolicy(1)),
        checkpoint=Parsed(parse_checkpoint_policy({"inputs": ["src"]})),
        continue_from="checkpoint:" + "a" * 64,
    )
    assert request.tier is TIERS["write-feature"]


@pytest.mark.parametrize(("alias", "canonical"), sorted(TIER_ALIASES.items()))
def test_spawn_normalizes_legacy_aliases_and_keeps_the_requested_name(alias: str, canonical: str) -> None:
    request = parse_spawn({"prompt": "p", "model_slot": alias})
    assert (request.model_slot, request.requested_model_slot) == (canonical, alias)


@pytest.mark.parametrize("tier", list(TIERS))
def test_spawn_accepts_every_canonical_tier(tier: str) -> None:
    assert parse_spawn({"prompt": "p", "model_slot": tier}).model_slot == tier


@pytest.mark.parametrize("slot", ["reading-slow", "Read-Review", "", 3])
def test_spawn_unknown_tier_lists_the_canonical_tiers(slot: object) -> None:
    message = fails(lambda: parse_spawn({"prompt": "p", "model_slot": slot}), kind=UnknownTierError)
    assert message.startswith("Unknown model_slot")
    for tier in TIERS:
        assert tier in message


@pytest.mark.parametrize("value", ["openai/gpt", None])
@pytest.mark.parametrize("field", ["model", "thinking", "role"])
def test_spawn_rejects_model_thinking_and_role_even_when_null(field: str, value: object) -> None:
    fails(
        lambda: parse_spawn({"prompt": "p", field: value}),
        "spawn_agent must use model_slot only. Do not pass model, thinking, role",
        kind=SpawnFieldsError,
    )


@pytest.mark.parametrize("name", ["a b", "x/y", "ünï", "dot.name", "", "a\nb"])
def test_spawn_name_must_match_the_pattern(name: str) -> None:
    message = fails(lambda: parse_spawn({"prompt": "p", "name": name}), NAME_ERROR)
    assert message.startswith("Invalid name ")


def test_spawn_name_exact_text() -> None:
    assert (
        fails(lambda: parse_spawn({"prompt": "p", "name": "bad name"}))
        == "Invalid name bad name. Only alphanumeric characters, hyphens, and underscores are allowed."
    )


def test_spawn_name_length_and_reserved_lead_name() -> None:
    assert parse_spawn({"prompt": "p", "name": "A-z_9" + "x" * (NAME_MAX_LENGTH - 5)}).name is not None
    fails(lambda: parse_spawn({"prompt": "p", "name": "x" * (NAME_MAX_LENGTH + 1)}), "at most 128")
    fails(lambda: parse_spawn({"prompt": "p", "name": LEAD_RECIPIENT}), "reserved for the lead")
    fails(lambda: parse_spawn({"prompt": "p", "name": 7}), "name", "string")


@pytest.mark.parametrize("value", ["eager", "None", "LAZY", 1, True])
def test_spawn_session_context_must_be_none_or_lazy(value: object) -> None:
    message = fails(lambda: parse_spawn({"prompt": "p", "session_context": value}))
    assert message == f"{value} session_context must be none or lazy."


@pytest.mark.parametrize("prompt", ["", "   ", "\n\t"])
def test_spawn_prompt_must_not_be_blank(prompt: str) -> None:
    fails(lambda: parse_spawn({"prompt": prompt}), "spawn_agent", "prompt", "blank")


@pytest.mark.parametrize("args", [{}, {"prompt": None}, {"model_slot": "read-review"}])
def test_spawn_prompt_is_required(args: dict[str, Any]) -> None:
    fails(lambda: parse_spawn(args), "spawn_agent", "prompt", "required")


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("prompt", ["p"], ("prompt", "string")),
        ("cwd", "  ", ("cwd", "blank")),
        ("cwd", 5, ("cwd", "string")),
        ("metadata", ["a"], ("metadata", "object")),
        ("metadata", "op", ("metadata", "object")),
        ("allow_nested_read_agents", 1, ("allow_nested_read_agents", "true or false")),
        ("allow_nested_read_agents", "yes", ("allow_nested_read_agents", "true or false")),
        ("continue_from", " ", ("continue_from", "blank")),
        ("continue_from", 9, ("continue_from", "string")),
    ],
)
def test_spawn_field_types(field: str, value: object, words: tuple[str, ...]) -> None:
    fails(lambda: parse_spawn({"prompt": "p", field: value}), "spawn_agent: field", *words)


def test_spawn_booleans_accept_true_and_false_strings() -> None:
    assert parse_spawn({"prompt": "p", "allow_nested_read_agents": "true"}).allow_nested_read_agents is True
    assert parse_spawn({"prompt": "p", "allow_nested_read_agents": "false"}).allow_nested_read_agents is False


@pytest.mark.parametrize("key", ["prompt_file", "label", "timeoutMs", "defaults"])
def test_spawn_unknown_key_is_named(key: str) -> None:
    fails(lambda: parse_spawn({"prompt": "p", key: "x"}), f"unknown field {key}", "allowed fields")


def test_spawn_nulls_are_absent() -> None:
    nulls = {key: None for key in TEAMS_SCHEMAS["spawn_agent"]["properties"] if key != "prompt"}
    assert parse_spawn({"prompt": "p", **nulls}) == parse_spawn({"prompt": "p"})


def test_spawn_issue5_policies_are_parsed_and_a_bad_one_keeps_its_error_for_the_core() -> None:
    request = parse_spawn({"prompt": "p", "checks": [], "repair": {"maxAttempts": 0}, "checkpoint": "odd"})
    assert (request.checks, request.repair) == (Parsed(()), Parsed(RepairPolicy(0)))
    assert request.checkpoint is not None
    assert isinstance(request.checkpoint.error, InvalidRequestError)
    with pytest.raises(InvalidRequestError) as info:
        request.checkpoint.get()
    assert info.value is request.checkpoint.error


def test_spawn_arguments_must_be_an_object() -> None:
    fails(lambda: parse_spawn(["p"]), "spawn_agent: arguments must be a JSON object")  # type: ignore[arg-type]


def test_errors_carry_the_tool_as_operation_and_category() -> None:
    with pytest.raises(InvalidRequestError) as info:
        parse_spawn({"prompt": "p", "model": "x"})
    assert error_details(info.value)["operation"] == "spawn_agent"
    assert error_details(info.value)["category"] == "invalid_request"
    with pytest.raises(InvalidRequestError) as info:
        parse_stop({})
    assert info.value.operation == "stop_teammate"


# --- spawn_swarm_agents ------------------------------------------------------------------


@pytest.mark.parametrize("args", [{}, {"agents": []}, {"agents": None}, {"defaults": {"cwd": "x"}}])
def test_swarm_needs_at_least_one_agent(args: dict[str, Any]) -> None:
    assert fails(lambda: parse_swarm(args)) == "spawn_swarm_agents requires at least one agent."


def test_swarm_shallow_merge_agent_overrides_defaults() -> None:
    swarm = parse_swarm(
        {
            "defaults": {
                "model_slot": "read-analyze",
                "cwd": "pkg",
                "metadata": {"a": 1},
                "checks": [{"name": "t"}],
                "repair": {"maxAttempts": 2},
                "session_context": "lazy",
            },
            "agents": [
                {"name": "one", "prompt": "p1"},
                {
                    "name": "two",
                    "prompt": "p2",
                    "model_slot": "reading-fast",
                    "metadata": {"b": 2},
                    "checks": [],
                },
                {"name": "three", "prompt": "p3", "repair": {"maxAttempts": 0}, "cwd": None},
            ],
        }
    )
    one, two, three = swarm.members
    assert (one.model_slot, one.cwd, one.metadata, one.session_context) == (
        "read-analyze",
        "pkg",
        {"a": 1},
        "lazy",
    )
    assert one.checks is not None and one.repair is not None
    assert str(one.checks.error) == "Invalid assigned check policy."  # the default reaches every member
    assert (two.model_slot, two.requested_model_slot) == ("read-collect", "reading-fast")
    assert two.metadata == {"b": 2}  # replaced, not deep-merged
    assert two.checks == Parsed(())  # explicit "no checks" kept
    assert three.repair == Parsed(RepairPolicy(0))
    assert three.cwd == "pkg"  # a null does not override the default
    assert swarm.completion_group is None


def test_swarm_defaults_and_completion_group_are_optional_and_parsed() -> None:
    swarm = parse_swarm({"agents": [{"prompt": "p"}], "completion_group": {"delivery": "all-settled"}})
    assert swarm.members == (SpawnRequest("p", "read-review", "read-review"),)
    assert swarm.completion_group == Parsed(parse_completion_group({"delivery": "all-settled"}))
    assert parse_swarm(
        {"agents": [{"prompt": "p"}], "defaults": None, "completion_group": None}
    ) == parse_swarm({"agents": [{"prompt": "p"}]})


def test_swarm_one_bad_tier_fails_the_whole_call_naming_the_member() -> None:
    message = fails(
        lambda: parse_swarm(
            {"agents": [{"name": "ok", "prompt": "p"}, {"name": "bad", "prompt": "p", "model_slot": "nope"}]}
        ),
        "agents[1] (bad)",
        "Unknown model_slot 'nope'",
        kind=UnknownTierError,
    )
    assert all(tier in message for tier in TIERS)


def test_swarm_bad_default_tier_names_the_defaults() -> None:
    fails(
        lambda: parse_swarm({"defaults": {"model_slot": "x"}, "agents": [{"prompt": "p"}]}),
        "spawn_swarm_agents defaults: Unknown model_slot",
        kind=UnknownTierError,
    )


@pytest.mark.parametrize(
    "args",
    [
        {"model": "x", "agents": [{"prompt": "p"}]},
        {"defaults": {"thinking": "high"}, "agents": [{"prompt": "p"}]},
        {"agents": [{"prompt": "p"}, {"prompt": "q", "role": "write"}]},
    ],
)
def test_swarm_rejects_model_thinking_role_anywhere(args: dict[str, Any]) -> None:
    fails(lambda: parse_swarm(args), "must use model_slot only", kind=SpawnFieldsError)


def test_swarm_continue_from_only_on_individual_agents() -> None:
    fails(
        lambda: parse_swarm({"defaults": {"continue_from": "checkpoint:1"}, "agents": [{"prompt": "p"}]}),
        "defaults cannot set continue_from",
    )
    swarm = parse_swarm({"agents": [{"prompt": "p", "name": "auth", "continue_from": "checkpoint:1"}]})
    assert swarm.members[0].continue_from == "checkpoint:1"


def test_swarm_member_errors_name_the_member() -> None:
    fails(
        lambda: parse_swarm({"agents": [{"prompt": "p"}, {"prompt": "q", "name": "a b"}]}),
        "spawn_swarm_agents agents[1]",
        NAME_ERROR,
    )
    fails(
        lambda: parse_swarm({"agents": [{"prompt": "p", "name": "x", "session_context": "full"}]}),
        "agents[0] (x)",
        "full session_context must be none or lazy.",
    )
    fails(lambda: parse_swarm({"agents": [{"prompt": " "}]}), "agents[0]", "prompt", "blank")
    fails(lambda: parse_swarm({"agents": [{"name": "n"}]}), "agents[0] (n)", "prompt", "required")
    fails(lambda: parse_swarm({"agents": [{"prompt": "p", "bogus": 1}]}), "agents[0]", "unknown field bogus")
    fails(lambda: parse_swarm({"agents": ["p"]}), "agents[0] must be an object")
    fails(lambda: parse_swarm({"agents": {"prompt": "p"}}), "agents must be an array")


def test_swarm_default_errors_name_the_defaults() -> None:
    fails(lambda: parse_swarm({"defaults": [], "agents": [{"prompt": "p"}]}), "defaults must be an object")
    fails(
        lambda: parse_swarm({"defaults": {"name": "x"}, "agents": [{"prompt": "p"}]}),
        "spawn_swarm_agents defaults: unknown field name",
    )
    fails(
        lambda: parse_swarm({"defaults": {"session_context": "all"}, "agents": [{"prompt": "p"}]}),
        "spawn_swarm_agents defaults: all session_context must be none or lazy.",
    )
    fails(lambda: parse_swarm({"defaults": {"cwd": ""}, "agents": [{"prompt": "p"}]}), "defaults", "cwd")


def test_swarm_unknown_top_level_key() -> None:
    fails(lambda: parse_swarm({"agents": [{"prompt": "p"}], "members": []}), "unknown field members")


def test_swarm_names_must_be_unique_except_continuation_prefixes() -> None:
    fails(
        lambda: parse_swarm({"agents": [{"prompt": "p", "name": "dup"}, {"prompt": "q", "name": "dup"}]}),
        "agents[1]",
        "dup",
        "unique",
    )
    swarm = parse_swarm(
        {
            "agents": [
                {"prompt": "p", "name": "auth", "continue_from": "checkpoint:1"},
                {"prompt": "q", "name": "auth", "continue_from": "checkpoint:2"},
                {"prompt": "r"},
                {"prompt": "s"},
            ]
        }
    )
    assert len(swarm.members) == 4


# --- nested spawn tools ------------------------------------------------------------------


def test_nested_spawn_defaults_and_fields() -> None:
    assert parse_nested_spawn({"prompt": "Check the paths."}) == SpawnRequest(
        "Check the paths.", "read-review", "read-review"
    )
    request = parse_nested_spawn({"prompt": "p", "name": "h1", "model_slot": "read-critical"})
    assert (request.name, request.model_slot, request.cwd, request.allow_nested_read_agents) == (
        "h1",
        "read-critical",
        None,
        False,
    )


@pytest.mark.parametrize(
    "key", ["cwd", "metadata", "session_context", "checks", "repair", "checkpoint", "continue_from", "x"]
)
@pytest.mark.parametrize("value", ["v", None])
def test_nested_spawn_whitelist(key: str, value: object) -> None:
    assert (
        fails(lambda: parse_nested_spawn({"prompt": "p", key: value}))
        == f"spawn_agent accepts only name, prompt, model_slot; do not pass {key}."
    )
    assert (
        fails(lambda: parse_nested_swarm({"agents": [{"prompt": "p", key: value}]}))
        == f"spawn_swarm_agents accepts only name, prompt, model_slot; do not pass {key}."
    )


def test_nested_spawn_forbidden_fields_use_the_tiers_message() -> None:
    fails(
        lambda: parse_nested_spawn({"prompt": "p", "model": "x"}),
        "must use model_slot only",
        kind=SpawnFieldsError,
    )
    fails(
        lambda: parse_nested_swarm({"agents": [{"prompt": "p", "thinking": "x"}]}),
        "must use model_slot only",
        kind=SpawnFieldsError,
    )


@pytest.mark.parametrize("slot", ["write-patch", "write-critical", "reading-fast", "reading-default", "nope"])
def test_nested_tools_accept_only_canonical_read_tiers(slot: str) -> None:
    fails(
        lambda: parse_nested_spawn({"prompt": "p", "model_slot": slot}), *HELPER_TIERS, kind=UnknownTierError
    )
    fails(
        lambda: parse_nested_swarm({"agents": [{"prompt": "p", "model_slot": slot}]}),
        "agents[0]",
        kind=UnknownTierError,
    )
    fails(
        lambda: parse_nested_swarm({"defaults": {"model_slot": slot}, "agents": [{"prompt": "p"}]}),
        "defaults",
        kind=UnknownTierError,
    )


@pytest.mark.parametrize("slot", HELPER_TIERS)
def test_nested_tools_accept_every_helper_tier(slot: str) -> None:
    assert parse_nested_spawn({"prompt": "p", "model_slot": slot}).model_slot == slot


def test_nested_swarm_defaults_and_members() -> None:
    swarm = parse_nested_swarm(
        {
            "defaults": {"model_slot": "read-analyze"},
            "agents": [
                {"prompt": "a", "name": "h1"},
                {"prompt": "b", "model_slot": "read-collect", "name": None},
            ],
        }
    )
    assert [(m.name, m.model_slot, m.requested_model_slot) for m in swarm.members] == [
        ("h1", "read-analyze", "read-analyze"),
        (None, "read-collect", "read-collect"),
    ]
    assert swarm.completion_group is None
    assert (
        parse_nested_swarm({"agents": [{"prompt": "a"}], "defaults": None}).members[0].model_slot
        == "read-review"
    )


def test_nested_swarm_whitelists_top_level_and_defaults() -> None:
    assert (
        fails(
            lambda: parse_nested_swarm(
                {"agents": [{"prompt": "p"}], "completion_group": {"delivery": "immediate"}}
            )
        )
        == "spawn_swarm_agents accepts only defaults, agents; do not pass completion_group."
    )
    assert (
        fails(lambda: parse_nested_swarm({"defaults": {"cwd": "x"}, "agents": [{"prompt": "p"}]}))
        == "spawn_swarm_agents defaults accept only model_slot; do not pass cwd."
    )
    assert (
        fails(lambda: parse_nested_swarm({"agents": []})) == "spawn_swarm_agents requires at least one agent."
    )
    fails(lambda: parse_nested_swarm({"agents": [{"prompt": "p", "name": "a b"}]}), NAME_ERROR)
    fails(
        lambda: parse_nested_swarm({"agents": [{"prompt": "p", "name": "h"}, {"prompt": "q", "name": "h"}]}),
        "unique",
    )


# --- send_message and read_inbox ----------------------------------------------------------


@pytest.mark.parametrize("args", [{"content": "hi"}, {"content": "hi", "recipient": None}])
def test_send_message_lead_must_name_a_recipient(args: dict[str, Any]) -> None:
    assert (
        fails(lambda: parse_send_message(args, lead=True))
        == "recipient is required when the lead sends a message."
    )


def test_send_message_lead_recipient_is_stripped() -> None:
    assert parse_send_message({"recipient": " scout ", "content": "hi"}, lead=True) == SendMessageRequest(
        "scout", "hi"
    )


def test_send_message_agent_defaults_to_the_lead_and_summary_to_message() -> None:
    assert parse_send_message({"content": " hi "}, lead=False) == SendMessageRequest(LEAD_RECIPIENT, " hi ")
    request = parse_send_message({"content": "hi", "recipient": "peer", "summary": "Evidence"}, lead=False)
    assert (request.recipient, request.summary) == ("peer", "Evidence")
    assert parse_send_message({"content": "hi", "summary": "  "}, lead=False).summary == "Message"
    assert parse_send_message({"content": "hi", "summary": None}, lead=False).summary == "Message"


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"content": " "}, ("content", "blank")),
        ({}, ("content", "required")),
        ({"content": 1}, ("content", "string")),
        ({"content": "x", "recipient": " "}, ("recipient", "blank")),
        ({"content": "x", "to": "a"}, ("unknown field to",)),
    ],
)
def test_send_message_bad_arguments(args: dict[str, Any], words: tuple[str, ...]) -> None:
    fails(lambda: parse_send_message(args, lead=False), "send_message", *words)


def test_read_inbox_defaults_and_fields() -> None:
    assert parse_read_inbox({}, lead=False) == ReadInboxRequest()
    assert parse_read_inbox({}, lead=True) == ReadInboxRequest(
        unread_only=True, mark_as_read=True, agent_name=None
    )
    assert parse_read_inbox(
        {"unread_only": False, "mark_as_read": "false", "agent_name": " scout "}, lead=True
    ) == ReadInboxRequest(unread_only=False, mark_as_read=False, agent_name="scout")
    assert parse_read_inbox({"unread_only": None, "mark_as_read": None}, lead=False) == ReadInboxRequest()


def test_read_inbox_agent_name_is_lead_only() -> None:
    fails(lambda: parse_read_inbox({"agent_name": "other"}, lead=False), "unknown field agent_name")
    fails(lambda: parse_read_inbox({"unread_only": "no"}, lead=False), "unread_only", "true or false")


# --- report_and_exit -------------------------------------------------------------------------


def test_report_minimal_and_full() -> None:
    assert parse_report({"content": "All done."}) == ReportSubmission("All done.")
    report = parse_report(
        {
            "content": "Body",
            "summary": "API decision needed",
            "outcome": "blocked",
            "changedPaths": ["src/a.py"],
            "artifacts": [{"path": "out/log.txt", "label": "log", "size": 3}, {"path": "b", "label": None}],
            "findings": [
                {"id": "F1", "text": "t", "evidence": ["a.py:3"], "severity": "high"},
                {"id": "F2", "text": "u"},
            ],
            "questions": ["Auth?"],
            "inspectedEvidence": ["a.py:1-40"],
        }
    )
    assert report == ReportSubmission(
        "Body",
        summary="API decision needed",
        outcome="blocked",
        changed_paths=("src/a.py",),
        artifacts=(Artifact("out/log.txt", label="log"), Artifact("b")),
        findings=(Finding("F1", "t", evidence=("a.py:3",)), Finding("F2", "u")),
        questions=("Auth?",),
        inspected_evidence=("a.py:1-40",),
    )
    assert list(report.claims().to_json().items()) == [  # the stored order
        ("changedPaths", ["src/a.py"]),
        ("inspectedEvidence", ["a.py:1-40"]),
        ("artifacts", [{"path": "out/log.txt", "label": "log"}, {"path": "b"}]),
        (
            "findings",
            [{"id": "F1", "text": "t", "evidence": ["a.py:3"]}, {"id": "F2", "text": "u", "evidence": []}],
        ),
        ("questions", ["Auth?"]),
    ]


def test_report_empty_claims_are_omitted_from_the_result() -> None:
    report = parse_report(
        {
            "content": "x",
            "changedPaths": [],
            "artifacts": None,
            "findings": [],
            "questions": None,
            "summary": " ",
        }
    )
    assert report == ReportSubmission("x")
    assert report.claims().to_json() == {}


@pytest.mark.parametrize("outcome", TASK_OUTCOMES)
def test_report_accepts_each_outcome(outcome: str) -> None:
    assert parse_report({"content": "x", "outcome": outcome}).outcome == outcome


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ({"content": "  "}, ("content", "blank")),
        ({}, ("content", "required")),
        ({"content": None}, ("content", "required")),
        ({"content": "x", "outcome": "done"}, ("outcome", "succeeded, blocked, failed, cancelled")),
        ({"content": "x", "changedPaths": "a.py"}, ("changedPaths", "array")),
        ({"content": "x", "changedPaths": ["a", ""]}, ("changedPaths[1]", "blank")),
        ({"content": "x", "artifacts": [{"label": "l"}]}, ("artifacts[0].path", "required")),
        ({"content": "x", "artifacts": [{"path": " "}]}, ("artifacts[0].path", "blank")),
        ({"content": "x", "artifacts": ["a.txt"]}, ("artifacts[0]", "object")),
        ({"content": "x", "findings": [{"id": "F1"}]}, ("findings[0].text", "required")),
        ({"content": "x", "findings": [{"id": " ", "text": "t"}]}, ("findings[0].id", "blank")),
        (
            {"content": "x", "findings": [{"id": "F", "text": "t", "evidence": [1]}]},
            ("evidence[0]", "string"),
        ),
        ({"content": "x", "questions": [None]}, ("questions[0]", "string")),
        ({"content": "x", "taskId": "t"}, ("unknown field taskId",)),
        ({"content": "x", "verification": {}}, ("unknown field verification",)),
        ({"content": "x", "changed_paths": ["a"]}, ("unknown field changed_paths",)),
    ],
)
def test_report_bad_arguments(args: dict[str, Any], words: tuple[str, ...]) -> None:
    fails(lambda: parse_report(args), "report_and_exit", *words)


def test_report_finding_ids_must_be_unique() -> None:
    args = {
        "content": "x",
        "findings": [{"id": "F1", "text": "a"}, {"id": "F2", "text": "b"}, {"id": "F1", "text": "c"}],
    }
    assert fails(lambda: parse_report(args)) == "Finding IDs must be unique; duplicate F1."


def test_report_inspected_evidence_bounds() -> None:
    items = ["e" * MAX_EVIDENCE_CHARS] + [f"r{i}" for i in range(MAX_INSPECTED_EVIDENCE - 1)]
    assert len(parse_report({"content": "x", "inspectedEvidence": items}).inspected_evidence) == 128
    fails(lambda: parse_report({"content": "x", "inspectedEvidence": [*items, "one more"]}), "at most 128")


@pytest.mark.parametrize("bad", ["", "   ", "e" * (MAX_EVIDENCE_CHARS + 1)])
def test_report_inspected_evidence_items(bad: str) -> None:
    fails(
        lambda: parse_report({"content": "x", "inspectedEvidence": ["ok", bad]}),
        "inspectedEvidence[1]",
        "1 to 2048 characters with a non-space character",
    )


# --- status, control and claims ----------------------------------------------------------------


@pytest.mark.parametrize("tool", ["check_teammate", "interrupt_teammate"])
def test_agent_name_tools(tool: str) -> None:
    assert parse_agent_name({"agent_name": " scout "}, tool=tool) == AgentNameRequest("scout")
    fails(lambda: parse_agent_name({}, tool=tool), f"{tool}: field agent_name is required")
    fails(lambda: parse_agent_name({"agent_name": None}, tool=tool), "agent_name", "required")
    fails(lambda: parse_agent_name({"agent_name": ""}, tool=tool), "agent_name", "blank")
    fails(lambda: parse_agent_name({"agent_name": "a", "reason": "r"}, tool=tool), "unknown field reason")


def test_stop_teammate() -> None:
    assert parse_stop({"agent_name": "scout"}) == StopRequest("scout")
    assert parse_stop({"agent_name": "scout", "reason": "user asked"}) == StopRequest(
        "scout", reason="user asked"
    )
    assert parse_stop({"agent_name": "scout", "reason": None}).reason is None
    fails(lambda: parse_stop({"reason": "r"}), "stop_teammate", "agent_name", "required")


def test_status() -> None:
    assert parse_status({}) == StatusRequest()
    assert parse_status({"agent_name": None}) == StatusRequest()
    assert parse_status({"agent_name": "scout"}) == StatusRequest(agent_name="scout")
    fails(lambda: parse_status({"agent_name": " "}), "get_agent_status", "blank")
    fails(lambda: parse_status({"all": True}), "unknown field all")


@pytest.mark.parametrize("tool", ["claim_file", "release_file"])
def test_claim_paths(tool: str) -> None:
    assert parse_claim({"paths": ["./a", "b/"]}, tool=tool) == ClaimRequest(("./a", "b/"))
    fails(lambda: parse_claim({"paths": []}, tool=tool), tool, "at least one path")
    fails(lambda: parse_claim({}, tool=tool), tool, "paths", "required")
    fails(lambda: parse_claim({"paths": None}, tool=tool), "paths", "required")
    fails(lambda: parse_claim({"paths": "a"}, tool=tool), "paths", "array")
    fails(lambda: parse_claim({"paths": ["a", " "]}, tool=tool), "paths[1]", "blank")
    fails(lambda: parse_claim({"paths": ["a", 2]}, tool=tool), "paths[1]", "string")


def test_list_claims_takes_no_arguments() -> None:
    parse_list_claims({})  # no arguments: accepted (raises otherwise)
    parse_list_claims({}.copy())
    fails(lambda: parse_list_claims({"agent": "x"}), "list_file_claims: unknown field agent")


# --- schemas -------------------------------------------------------------------------------------

PARSERS: dict[str, Callable[[dict[str, Any]], object]] = {
    "spawn_agent": parse_spawn,
    "spawn_swarm_agents": parse_swarm,
    "spawn_agent#nested": parse_nested_spawn,
    "spawn_swarm_agents#nested": parse_nested_swarm,
    "send_message": lambda p: parse_send_message(p, lead=True),
    "send_message#agent": lambda p: parse_send_message(p, lead=False),
    "read_inbox": lambda p: parse_read_inbox(p, lead=True),
    "read_inbox#agent": lambda p: parse_read_inbox(p, lead=False),
    "report_and_exit": parse_report,
    "get_agent_status": parse_status,
    "check_teammate": lambda p: parse_agent_name(p, tool="check_teammate"),
    "interrupt_teammate": lambda p: parse_agent_name(p, tool="interrupt_teammate"),
    "stop_teammate": parse_stop,
    "claim_file": lambda p: parse_claim(p, tool="claim_file"),
    "release_file": lambda p: parse_claim(p, tool="release_file"),
    "list_file_claims": parse_list_claims,
}

_KEYWORDS = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "enum",
    "default",
    "description",
    "pattern",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
}
_PY_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str,
    "boolean": bool,
    "integer": int,
    "number": (int, float),
    "array": list,
    "object": dict,
}


_SELF_DESCRIBING = {"agent_name", "summary", "outcome", "changedPaths", "unread_only", "content"}
"""Fields whose name (and type or enum) is all the model needs (issue 16: no more than it needs)."""


def check_schema_node(node: Any, where: str, *, top: bool = True) -> None:
    """A JSON Schema node using only the keywords tool schemas use, each well-formed.

    Every field of a tool is described unless its name says it all (`_SELF_DESCRIBING`); a nested
    field may also go without when its parent points to where it is described (a swarm's copy of
    spawn_agent's fields).
    """
    assert isinstance(node, dict), where
    assert set(node) <= _KEYWORDS, f"{where}: unknown keywords {set(node) - _KEYWORDS}"
    kind = node.get("type")
    assert kind in _PY_TYPES, f"{where}: type {kind!r}"
    assert isinstance(node.get("description", ""), str)
    for value in node.get("enum", []):
        assert isinstance(value, _PY_TYPES[kind]), f"{where}: enum value {value!r}"
    if "default" in node:
        assert isinstance(node["default"], _PY_TYPES[kind]), f"{where}: default"
        assert "enum" not in node or node["default"] in node["enum"], f"{where}: default not in enum"
    if "pattern" in node:
        re.compile(node["pattern"])
        assert kind == "string"
    if kind == "object":
        properties = node.get("properties", {})
        assert isinstance(properties, dict)
        assert set(node.get("required", [])) <= set(properties), f"{where}: required not in properties"
        assert node.get("additionalProperties", False) in (True, False)
        for name, sub in properties.items():
            described = sub.get("description") or name in _SELF_DESCRIBING
            assert described or not top, f"{where}.{name}: no description"
            check_schema_node(sub, f"{where}.{name}", top=False)
    if kind == "array":
        check_schema_node(node["items"], f"{where}[]", top=False)


def sample(node: dict[str, Any]) -> Any:
    """The simplest value the schema node describes (required parts only)."""
    if "enum" in node:
        return node["enum"][0]
    kind = node["type"]
    if kind == "object":
        return {key: sample(node["properties"][key]) for key in node.get("required", [])}
    if kind == "array":
        return [sample(node["items"])]
    return {"string": "x1", "boolean": True, "integer": node.get("minimum", 1), "number": 1}[kind]


def variants(node: dict[str, Any]) -> Iterator[Any]:
    """The minimal sample, then one sample per optional property (recursively into objects and arrays)."""
    base = sample(node)
    yield base
    if node["type"] == "array":
        for item in variants(node["items"]):
            yield [item]
    if node["type"] == "object":
        for key, sub in node.get("properties", {}).items():
            for value in variants(sub):
                yield {**base, key: value}


def test_every_schema_has_a_parser() -> None:
    assert set(TEAMS_SCHEMAS) == set(PARSERS)


@pytest.mark.parametrize("key", sorted(TEAMS_SCHEMAS))
def test_schema_is_a_valid_json_schema_object(key: str) -> None:
    schema = TEAMS_SCHEMAS[key]
    check_schema_node(schema, key)
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False


@pytest.mark.parametrize("key", sorted(TEAMS_SCHEMAS))
def test_parser_accepts_what_the_schema_describes(key: str) -> None:
    schema, parse = TEAMS_SCHEMAS[key], PARSERS[key]
    count = 0
    for args in variants(schema):
        validate_tool_arguments(key, schema, args)  # the sample really fits the schema
        parse(args)
        count += 1
    assert count >= 1 + len(schema["properties"])


@pytest.mark.parametrize("key", sorted(TEAMS_SCHEMAS))
def test_parser_rejects_what_the_schema_forbids(key: str) -> None:
    schema, parse = TEAMS_SCHEMAS[key], PARSERS[key]
    minimal = sample(schema)
    with pytest.raises(InvalidRequestError):
        parse({**minimal, "not_a_field": "x"})
    for required in schema.get("required", []):
        with pytest.raises(InvalidRequestError):
            parse({k: v for k, v in minimal.items() if k != required})


@pytest.mark.parametrize("key", sorted(TEAMS_SCHEMAS))
def test_schema_defaults_are_the_parser_defaults(key: str) -> None:
    schema, parse = TEAMS_SCHEMAS[key], PARSERS[key]
    result = parse(sample(schema))
    for name, sub in schema["properties"].items():
        if "default" in sub:
            assert getattr(result, name) == sub["default"], name


def test_model_slot_schema_teaches_the_tiers() -> None:
    slot = TEAMS_SCHEMAS["spawn_agent"]["properties"]["model_slot"]
    assert slot["enum"] == list(TIERS)
    assert slot["default"] == "read-review"
    for tier in TIERS.values():
        assert f"{tier.name}: {tier.purpose}" in slot["description"]
    for key in ("spawn_swarm_agents",):
        props = TEAMS_SCHEMAS[key]["properties"]
        undescribed = {k: v for k, v in slot.items() if k != "description"}
        assert props["defaults"]["properties"]["model_slot"] == undescribed
        assert props["agents"]["items"]["properties"]["model_slot"] == undescribed
        assert "spawn_agent" in props["defaults"]["description"]  # described once, in spawn_agent
        assert "spawn_agent" in props["agents"]["description"]
    helper = TEAMS_SCHEMAS["spawn_agent#nested"]["properties"]["model_slot"]
    assert helper["enum"] == list(HELPER_TIERS)
    nested_swarm = TEAMS_SCHEMAS["spawn_swarm_agents#nested"]["properties"]
    assert nested_swarm["agents"]["items"]["properties"]["model_slot"] == helper


def test_variant_schemas_differ_where_the_callers_differ() -> None:
    assert TEAMS_SCHEMAS["send_message"]["required"] == ["recipient", "content"]
    assert TEAMS_SCHEMAS["send_message#agent"]["required"] == ["content"]
    assert "agent_name" in TEAMS_SCHEMAS["read_inbox"]["properties"]
    assert "agent_name" not in TEAMS_SCHEMAS["read_inbox#agent"]["properties"]
    assert set(TEAMS_SCHEMAS["spawn_agent#nested"]["properties"]) == {"name", "prompt", "model_slot"}
    assert "continue_from" not in TEAMS_SCHEMAS["spawn_swarm_agents"]["properties"]["defaults"]["properties"]
