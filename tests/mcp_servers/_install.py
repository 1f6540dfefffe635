"""Install the real MCP servers from npm, pinned, for `tests/mcp_servers/` and `bench_mcp_client.py`.

Each server is installed once into `~/.cache/corral-tests/mcp-<name>-<version>` (`$CORRAL_TEST_CACHE`
overrides the root), under a file lock so parallel workers share one install; later runs only check
that the package is there (as `tests/harness/real/_install.py` installs the ACP agents). They run with
the system's Node when it is new enough, else npm's Node 22 (`tests/e2e/_pi_real.node_for`).
`python -m tests.mcp_servers._install` installs them ahead of a run (`.ci/run`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tests.e2e._pi_real import _npm_install, cache_root, node_for, require_node

__all__ = ["REAL_SERVERS", "RealServer", "install", "server_node"]

SERVER_NODE = (18, 0)
"""The Node the servers declare they need (the MCP TypeScript SDK's floor)."""


@dataclass(frozen=True)
class RealServer:
    name: str
    package: str
    version: str
    script: str
    """The server's program, under its package."""

    @property
    def folder(self) -> Path:
        return cache_root() / f"mcp-{self.name}-{self.version}"

    @property
    def entry(self) -> Path:
        return self.folder / "node_modules" / self.package / self.script

    def installed(self) -> bool:
        return self.entry.exists()

    def settings(self, *args: str, **extra: object) -> dict[str, object]:
        """Its `[mcp_servers.<name>]` table: Node running its program with `args`."""
        return {"command": str(server_node()), "args": [str(self.entry), *args], **extra}


REAL_SERVERS = {
    server.name: server
    for server in (
        RealServer("everything", "@modelcontextprotocol/server-everything", "2026.8.31", "dist/index.js"),
        RealServer("filesystem", "@modelcontextprotocol/server-filesystem", "2026.8.31", "dist/index.js"),
    )
}
"""The MCP servers nobody here wrote that the tests run against, by name."""


def server_node() -> Path:
    """A Node at least `SERVER_NODE`: the system's, else npm's Node 22 (installed on first use)."""
    return node_for(require_node(), SERVER_NODE, "the npm MCP servers")


def install(name: str) -> RealServer:
    """The server `name`, installed if it was not (`unavailable` when npm is missing or fails)."""
    server = REAL_SERVERS[name]
    if not server.installed():
        server_node()
        _npm_install(server.folder, f"{server.package}@{server.version}", server.entry)
    return server


if __name__ == "__main__":  # pragma: no cover - used by .ci/run, with PYTHONPATH=src and no pytest
    for wanted in sys.argv[1:] or list(REAL_SERVERS):
        installed = install(wanted)
        print(f"{wanted}: {installed.package}@{installed.version} in {installed.folder}")
