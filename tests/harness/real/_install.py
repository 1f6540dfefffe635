"""Install the real ACP agents from npm, pinned, for `test_real_agents.py` and `bench_harness.py`.

Each agent is installed once into `~/.cache/corral-tests/acp-<harness>-<version>`
(`$CORRAL_TEST_CACHE` overrides the root), under a file lock so parallel workers share one
install; later runs only check that the package is there. The versions are the presets'
(`corral.harness.ACP_PRESETS`): on Node 20 an unpinned `npm install` silently picks older ones.
`python -m tests.harness.real._install [harness …]` installs them ahead of a run (`.ci/run`).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from corral.harness import ACP_PRESETS
from tests.e2e._pi_real import _npm_install, cache_root, require_node

__all__ = ["REAL_AGENTS", "RealAgent", "install"]


@dataclass(frozen=True)
class RealAgent:
    harness: str
    """The preset's name (`claude-code`, …)."""
    bin_subdir: str = "node_modules/.bin"
    """Where the preset's program is, under the install folder."""

    @property
    def package(self) -> str:
        return ACP_PRESETS[self.harness].package

    @property
    def version(self) -> str:
        return ACP_PRESETS[self.harness].version

    @property
    def folder(self) -> Path:
        return cache_root() / f"acp-{self.harness}-{self.version}"

    @property
    def bin_dir(self) -> Path:
        """The folder to put first on `PATH` so the preset's command finds the program."""
        return self.folder / self.bin_subdir

    @property
    def marker(self) -> Path:
        return self.folder / "node_modules" / self.package / "package.json"

    def installed(self) -> bool:
        program = ACP_PRESETS[self.harness].command[0]
        return self.marker.exists() and (self.bin_dir / program).exists()


REAL_AGENTS = {
    agent.harness: agent
    for agent in (
        RealAgent("claude-code"),
        RealAgent("goose", "node_modules/@aaif/goose-binary-linux-x64/bin"),
        RealAgent("opencode"),
        RealAgent("codex"),
    )
}
"""The real agents the tests run, by harness (Gemini CLI is not tested yet)."""


def install(harness: str) -> RealAgent:
    """The agent of `harness`, installed if it was not (`unavailable` when npm is missing or fails)."""
    agent = REAL_AGENTS[harness]
    if not agent.installed():
        require_node()
        _npm_install(agent.folder, f"{agent.package}@{agent.version}", agent.marker)
    return agent


if __name__ == "__main__":  # pragma: no cover - used by .ci/run, with PYTHONPATH=src and no pytest
    for name in sys.argv[1:] or list(REAL_AGENTS):
        installed = install(name)
        print(f"{name}: {installed.package}@{installed.version} in {installed.folder}")
