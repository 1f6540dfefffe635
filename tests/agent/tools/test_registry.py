"""create_builtin_tools, tool names and the model-facing definitions."""

from __future__ import annotations

from pathlib import Path

import pytest

import corral.agent.tools as tools_pkg
from corral.agent.tools import (
    ALL_TOOL_NAMES,
    DEFAULT_TOOL_NAMES,
    READ_ONLY_TOOL_NAMES,
    ToolsConfigError,
    create_builtin_tools,
)
from corral.errors import CorralError


def test_names() -> None:
    assert ALL_TOOL_NAMES == ("read", "bash", "edit", "write", "grep", "find", "ls")
    assert DEFAULT_TOOL_NAMES == ("read", "bash", "edit", "write")
    assert READ_ONLY_TOOL_NAMES == ("read", "grep", "find", "ls")


def test_default_is_all_seven_in_order(tmp_path: Path) -> None:
    assert [tool.name for tool in create_builtin_tools(tmp_path)] == list(ALL_TOOL_NAMES)


def test_selection_keeps_given_order(tmp_path: Path) -> None:
    tools = create_builtin_tools(tmp_path, names=["ls", "read", "ls"])
    assert [tool.name for tool in tools] == ["ls", "read"]


def test_unknown_name_is_a_corral_error(tmp_path: Path) -> None:
    with pytest.raises(ToolsConfigError, match="Unknown tool 'rm'") as info:
        create_builtin_tools(tmp_path, names=["read", "rm"])
    assert isinstance(info.value, CorralError)


def test_definitions_are_strict_json_schemas(tmp_path: Path) -> None:
    for tool in create_builtin_tools(tmp_path):
        schema = tool.definition().parameters
        assert schema["type"] == "object" and schema["additionalProperties"] is False
        assert set(schema["required"]) <= set(schema["properties"])
        assert tool.description and tool.label == tool.name and tool.prompt_snippet


def test_required_parameters_match_pi(tmp_path: Path) -> None:
    required = {tool.name: tool.parameters["required"] for tool in create_builtin_tools(tmp_path)}
    assert required == {
        "read": ["path"],
        "bash": ["command"],
        # Pi 0.58 required oldText/newText, later Pi `edits`; corral accepts either form.
        "edit": ["path"],
        "write": ["path", "content"],
        "grep": ["pattern"],
        "find": ["pattern"],
        "ls": [],
    }


def test_all_is_sorted_and_complete() -> None:
    assert tools_pkg.__all__ == sorted(tools_pkg.__all__, key=lambda n: (not n.isupper(), n))
    public = {name for name in dir(tools_pkg) if not name.startswith("_")}
    assert set(tools_pkg.__all__) <= public
