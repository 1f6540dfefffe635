"""The ACP harness: any coding agent that speaks the Agent Client Protocol, as a managed agent.

`AcpAgentSession` (`_session.py`) is an `AgentSession` whose runs are the agent's turns, recorded
into corral's session file; `_rpc.py` is the JSON-RPC connection to the agent process (its own
process group; `close` ends the tree); `_permissions.py` turns the agent's permission requests into
questions to the owner; `_texts.py` words the transcript a continued session is seeded with; `_config.py` maps the
definition's model and thinking level to the agent's session config options; `_files.py` answers
its file requests within its cwd; `_tools.py` maps its tool calls and file requests to the calls the
user's permission rules and hooks judge; `_mcp.py` shapes the MCP servers it is given;
`_commands.py` holds the command and the preset agents. docs/harnesses.md.
"""

from __future__ import annotations

from ._commands import PRESETS, AcpCommand, preset_command
from ._config import SessionConfig
from ._mcp import McpServerSpec
from ._permissions import (
    PermissionAsker,
    PermissionOption,
    PermissionRequest,
    choose_option,
    permission_question,
    refusal,
)
from ._rpc import AcpError
from ._session import PLAN_ENTRY, PROTOCOL_VERSION, SESSION_ENTRY, AcpAgentSession, AcpModel

__all__ = [
    "PLAN_ENTRY",
    "PRESETS",
    "PROTOCOL_VERSION",
    "SESSION_ENTRY",
    "AcpAgentSession",
    "AcpCommand",
    "AcpError",
    "AcpModel",
    "McpServerSpec",
    "PermissionAsker",
    "PermissionOption",
    "PermissionRequest",
    "SessionConfig",
    "choose_option",
    "permission_question",
    "preset_command",
    "refusal",
]
