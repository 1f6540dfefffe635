"""`corral mcp`: an MCP server over one lead session (the official `mcp` SDK, imported only here).

See docs/mcp.md. `main` runs it from the CLI. Importing this package loads no SDK: over stdio the
server answers the client's opening request before it imports one (`_handshake.py`). `build_server`
(in `_server`, which does import the SDK) makes the server object for tests and benchmarks.
"""

from __future__ import annotations

from ._handshake import LEAD_PROMPT
from ._serve import McpOptions, main, parse_bind, parse_budget, serve

__all__ = ["LEAD_PROMPT", "McpOptions", "main", "parse_bind", "parse_budget", "serve"]
