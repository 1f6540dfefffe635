"""`corral acp`: corral's lead as an Agent Client Protocol agent for editors (docs/acp.md).

A front end, like `cli`, `tui` and `_mcp`: `_wire` frames JSON-RPC over stdio, `_updates` turns the
lead's events and stored entries into `session/update`s, `_server` serves the methods, one lead per
ACP session. corral speaks ACP itself; the `agent-client-protocol` SDK is only the tests' client.
"""

from __future__ import annotations

from ._server import PROTOCOL_VERSION, AcpOptions, AcpServer, serve

__all__ = ["PROTOCOL_VERSION", "AcpOptions", "AcpServer", "serve"]
