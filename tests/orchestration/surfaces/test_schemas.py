"""The contract the model sees: tool names and schemas, pinned.

Update these snapshots only on purpose, after reading the diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corral.orchestration.surfaces import (
    ACTION_FIELDS,
    ACTIONS,
    MultiplexedAgentTool,
    TurnGuide,
    ask_owner_tool,
    operation_tools,
)
from corral.settings import Settings

from .helpers import FakeAgent, FakeController, fake_caller

AGENT_SCHEMA = {
    "type": "object",
    "properties": {
        "action": {
            "type": "string",
            "enum": [
                "list",
                "delegate",
                "continue",
                "steer",
                "interrupt",
                "reply",
                "close",
                "inspect",
                "transcript",
            ],
            "description": "The action to run.",
        },
        "definition": {
            "type": "string",
            "description": "delegate: name of an enabled agent definition from `list`.",
        },
        "task": {
            "type": "string",
            "description": "delegate, continue: the assignment, self-contained (non-blank).",
        },
        "label": {
            "type": "string",
            "pattern": "^[a-z][a-z0-9_-]{0,31}$",
            "description": "delegate: agent label, ^[a-z][a-z0-9_-]{0,31}$ (default: the "
            "definition name, then <name>-2, …).",
        },
        "cwd": {
            "type": "string",
            "description": "delegate: the agent's working directory, relative to yours (default: yours).",
        },
        "files": {
            "type": "array",
            "items": {"type": "string"},
            "description": "delegate, continue, steer, interrupt, reply: evidence files (paths "
            "relative to your cwd, or result:<request-id> references); small "
            "UTF-8 files are embedded, others referenced.",
        },
        "fork": {
            "type": "string",
            "description": "delegate: exact saved session path or full session id to fork into "
            "a new agent session.",
        },
        "timeoutMs": {
            "type": "integer",
            "minimum": 5001,
            "maximum": 300000,
            "description": "delegate, continue: startup budget in ms, integer 5001-300000.",
        },
        "session": {
            "type": "string",
            "description": "continue: exact session path or full session id of an agent session you own.",
        },
        "agent": {
            "type": "string",
            "description": "steer, interrupt, reply, close, inspect, transcript: the agent's label.",
        },
        "message": {
            "type": "string",
            "description": "steer, interrupt, reply: the text for the agent (non-blank).",
        },
    },
    "required": ["action"],
    "additionalProperties": False,
}
OPERATION_SCHEMAS = {
    "list": {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
    "delegate": {
        "type": "object",
        "properties": {
            "definition": {
                "type": "string",
                "description": "Name of an enabled agent definition from `list`.",
            },
            "task": {"type": "string", "description": "The assignment, self-contained (non-blank)."},
            "label": {
                "type": "string",
                "pattern": "^[a-z][a-z0-9_-]{0,31}$",
                "description": "Agent label, ^[a-z][a-z0-9_-]{0,31}$ (default: the "
                "definition name, then <name>-2, …).",
            },
            "cwd": {
                "type": "string",
                "description": "The agent's working directory, relative to yours (default: yours).",
            },
            "files": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Evidence files (paths relative to your cwd, or "
                "result:<request-id> references); small UTF-8 files "
                "are embedded, others referenced.",
            },
            "fork": {
                "type": "string",
                "description": "Exact saved session path or full session id to fork "
                "into a new agent session.",
            },
            "timeoutMs": {
                "type": "integer",
                "minimum": 5001,
                "maximum": 300000,
                "description": "Startup budget in ms, integer 5001-300000.",
            },
        },
        "required": ["definition", "task"],
        "additionalProperties": False,
    },
    "continue": {
        "type": "object",
        "properties": {
            "session": {
                "type": "string",
                "description": "Exact session path or full session id of an agent session you own.",
            },
            "task": {"type": "string", "description": "The assignment, self-contained (non-blank)."},
            "files": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Evidence files (paths relative to your cwd, or "
                "result:<request-id> references); small UTF-8 files "
                "are embedded, others referenced.",
            },
            "timeoutMs": {
                "type": "integer",
                "minimum": 5001,
                "maximum": 300000,
                "description": "Startup budget in ms, integer 5001-300000.",
            },
        },
        "required": ["session", "task"],
        "additionalProperties": False,
    },
    "steer": {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "The agent's label."},
            "message": {"type": "string", "description": "The text for the agent (non-blank)."},
            "files": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Evidence files (paths relative to your cwd, or "
                "result:<request-id> references); small UTF-8 files are "
                "embedded, others referenced.",
            },
        },
        "required": ["agent", "message"],
        "additionalProperties": False,
    },
    "interrupt": {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "The agent's label."},
            "message": {"type": "string", "description": "The text for the agent (non-blank)."},
            "files": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Evidence files (paths relative to your cwd, or "
                "result:<request-id> references); small UTF-8 files "
                "are embedded, others referenced.",
            },
        },
        "required": ["agent", "message"],
        "additionalProperties": False,
    },
    "reply": {
        "type": "object",
        "properties": {
            "agent": {"type": "string", "description": "The agent's label."},
            "message": {"type": "string", "description": "The text for the agent (non-blank)."},
            "files": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Evidence files (paths relative to your cwd, or "
                "result:<request-id> references); small UTF-8 files are "
                "embedded, others referenced.",
            },
        },
        "required": ["agent", "message"],
        "additionalProperties": False,
    },
    "close": {
        "type": "object",
        "properties": {"agent": {"type": "string", "description": "The agent's label."}},
        "required": ["agent"],
        "additionalProperties": False,
    },
    "inspect": {
        "type": "object",
        "properties": {"agent": {"type": "string", "description": "The agent's label."}},
        "required": ["agent"],
        "additionalProperties": False,
    },
    "transcript": {
        "type": "object",
        "properties": {"agent": {"type": "string", "description": "The agent's label."}},
        "required": ["agent"],
        "additionalProperties": False,
    },
}
ASK_OWNER_SCHEMA = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question for your owner (non-blank)."},
        "files": {
            "type": "array",
            "items": {"type": "string"},
            "description": "Evidence files (paths relative to your cwd, or result:<request-id> references).",
        },
    },
    "required": ["question"],
    "additionalProperties": False,
}


class _Host:
    def __init__(self, style: str = "multiplexed") -> None:
        self.controller = FakeController()
        self.settings = Settings(agent_tool_style=style)  # type: ignore[arg-type]


def test_agent_tool_definition_is_pinned() -> None:
    tool = MultiplexedAgentTool(FakeController(), fake_caller(), TurnGuide())
    definition = tool.definition()
    assert definition.name == "agent"
    assert definition.parameters == AGENT_SCHEMA


def test_operation_tool_definitions_are_pinned() -> None:
    tools = operation_tools(FakeController(), fake_caller())
    assert [t.name for t in tools] == [f"agent_{a}" for a in ACTIONS]
    assert {t.name: t.definition().parameters for t in tools} == {
        f"agent_{a}": schema for a, schema in OPERATION_SCHEMAS.items()
    }


def test_operation_schemas_hold_only_their_own_fields() -> None:
    for tool in operation_tools(FakeController(), fake_caller()):
        action = tool.name.removeprefix("agent_")
        properties: dict[str, Any] = tool.definition().parameters["properties"]
        assert list(properties) == list(ACTION_FIELDS[action])  # type: ignore[index]
        assert "action" not in properties


def test_ask_owner_definition_is_pinned() -> None:
    host = _Host()
    tool = ask_owner_tool(host, object(), FakeAgent())  # type: ignore[arg-type]
    assert tool.definition().name == "ask_owner"
    assert tool.definition().parameters == ASK_OWNER_SCHEMA


def test_loop_validation_schema_passes_everything_to_the_surface() -> None:
    """The loop validates `parameters`; the surface's own validation must see every bad call."""
    tool = MultiplexedAgentTool(FakeController(), fake_caller(), TurnGuide())
    assert tool.parameters == {"type": "object"}


def test_setting_selects_the_surface_style() -> None:
    from corral.orchestration.surfaces import agent_tools

    assert Settings().agent_tool_style == "multiplexed"
    assert [t.name for t in agent_tools(_Host(), fake_caller())] == ["agent"]  # type: ignore[arg-type]
    per_op = agent_tools(_Host("per-operation"), fake_caller())  # type: ignore[arg-type]
    assert [t.name for t in per_op] == [f"agent_{a}" for a in ACTIONS]


def _without_descriptions(node: Any) -> Any:
    if isinstance(node, dict):
        return {key: _without_descriptions(value) for key, value in node.items() if key != "description"}
    if isinstance(node, list):
        return [_without_descriptions(value) for value in node]
    return node


def test_teams_schemas_structure_is_pinned() -> None:
    """Every teams tool's fields, types, required lists, enums, defaults and bounds, pinned.

    The descriptions are free to change (they are pinned by the size test below); anything the
    model may send or must send is not. The snapshot was taken from the hand-written schemas
    before they were generated from the wire models.
    """
    from corral.orchestration.surfaces.teams import TEAMS_SCHEMAS

    pinned = json.loads((Path(__file__).parent / "snapshots" / "teams_schemas_structure.json").read_text())
    assert _without_descriptions(TEAMS_SCHEMAS) == pinned


def test_teams_lead_tool_definitions_stay_small() -> None:
    """The lead's teams tools, as a provider request carries them, fit in 11,000 characters (issue 16).

    Every field stays (the structure test above pins them); what the descriptions say is what a model
    needs to call the tools well, and no more.
    """
    from corral.orchestration.surfaces.teams import teams_lead_tools

    tools = teams_lead_tools(None, fake_caller())  # type: ignore[arg-type]
    offered = [
        {
            "type": "function",
            "function": {"name": d.name, "description": d.description, "parameters": d.parameters},
        }
        for d in (tool.definition() for tool in tools)
    ]
    assert len(offered) == 12
    assert len(json.dumps(offered)) <= 11_000
