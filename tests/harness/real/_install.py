"""Install the real ACP agents from npm, pinned, for `test_real_agents.py` and `bench_harness.py`.

Each agent is installed once into `~/.cache/corral-tests/acp-<harness>-<version>`
(`$CORRAL_TEST_CACHE` overrides the root), under a file lock so parallel workers share one
install; later runs only check that the package is there. The versions are the presets'
(`corral.harness.ACP_PRESETS`): on Node 20 an unpinned `npm install` silently picks older ones.
`python -m tests.harness.real._install [harness …]` installs them ahead of a run (`.ci/run`).
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from corral.harness import ACP_PRESETS
from tests.e2e._pi_real import _npm_install, cache_root, node_for, require_node

if TYPE_CHECKING:
    from tests.llm.fake_server import FakeProviderServer

__all__ = ["REAL_AGENTS", "RealAgent", "install", "provider_environment"]


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

    def search_path(self) -> str:
        """`PATH` for the agent: its program's folder, then a Node new enough for it, then the rest."""
        return os.pathsep.join((str(self.bin_dir), str(agent_node().parent), os.environ.get("PATH", "")))

    @property
    def marker(self) -> Path:
        return self.folder / "node_modules" / self.package / "package.json"

    def installed(self) -> bool:
        program = ACP_PRESETS[self.harness].command[0]
        return self.marker.exists() and (self.bin_dir / program).exists()


AGENT_NODE = (20, 0)
"""The Node the pinned agents ran with here (Claude's adapter declares `>= 22` and runs on 20); Debian's
`nodejs` is 18, and then npm's Node 22 is used (`node_for`), as for Pi."""


def agent_node() -> Path:
    """A Node at least `AGENT_NODE`: the system's, else npm's Node 22 (installed on first use)."""
    return node_for(require_node(), AGENT_NODE, "the ACP agents")


REAL_AGENTS = {
    agent.harness: agent
    for agent in (
        RealAgent("claude-code"),
        RealAgent("goose", "node_modules/@aaif/goose-binary-linux-x64/bin"),
        RealAgent("opencode"),
        RealAgent("codex"),
        RealAgent("gemini"),
    )
}
"""The real agents the tests run, by harness."""


def install(harness: str) -> RealAgent:
    """The agent of `harness`, installed if it was not (`unavailable` when npm is missing or fails)."""
    agent = REAL_AGENTS[harness]
    if not agent.installed():
        agent_node()
        _npm_install(agent.folder, f"{agent.package}@{agent.version}", agent.marker)
    return agent


def provider_environment(harness: str, server: FakeProviderServer, folder: Path) -> dict[str, str]:
    """The variables that point the agent of `harness` at the fake model `server`, as its user would
    set them (config files it needs go into `folder`; Codex's into the test cache, outside /tmp)."""
    url, base_url = server.url, server.base_url
    if harness == "claude-code":
        config = folder / "claude-config"
        config.mkdir(parents=True, exist_ok=True)
        # `default` mode asks through ACP; the adapter's own default, `auto`, asks a model classifier.
        (config / "settings.json").write_text(json.dumps({"permissions": {"defaultMode": "default"}}))
        return {
            "CLAUDE_CONFIG_DIR": str(config),
            "ANTHROPIC_BASE_URL": url,
            "ANTHROPIC_API_KEY": "fake-key",
            "DISABLE_AUTOUPDATER": "1",
        }
    if harness == "goose":
        return {
            "GOOSE_PROVIDER": "openai",
            "GOOSE_MODEL": "gpt-4o",
            "OPENAI_API_KEY": "fake-key",
            "OPENAI_HOST": url,
        }
    if harness == "opencode":
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "fake",
            "options": {"baseURL": base_url, "apiKey": "fake-key"},
            "models": {"fake-model": {"name": "fake-model"}},
        }
        opencode = {
            "$schema": "https://opencode.ai/config.json",
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "provider": {"fake": provider},
            "permission": {"bash": "ask", "edit": "ask"},  # OpenCode asks nothing by default
            "autoupdate": False,
            "share": "disabled",
        }
        path = folder / "opencode.json"
        path.write_text(json.dumps(opencode))
        return {
            "OPENCODE_CONFIG": str(path),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
        }
    if harness == "codex":
        # Codex cannot create its sandbox helper when CODEX_HOME is under /tmp.
        home = cache_root() / "codex-homes" / uuid.uuid4().hex
        home.mkdir(parents=True)
        (home / "config.toml").write_text(
            # `untrusted`: ask before any command that is not known to be read-only.
            'model = "gpt-5"\nmodel_provider = "fake"\napproval_policy = "untrusted"\n\n'
            '[model_providers.fake]\nname = "fake"\n'
            f'base_url = "{base_url}"\nenv_key = "FAKE_API_KEY"\nwire_api = "responses"\n'
        )
        return {"CODEX_HOME": str(home), "FAKE_API_KEY": "fake-key"}
    if harness == "gemini":
        home = folder / "agent-home" / ".gemini"  # the tests' and the benchmark's HOME
        home.mkdir(parents=True, exist_ok=True)
        settings = {"security": {"auth": {"selectedType": "gemini-api-key"}}}
        (home / "settings.json").write_text(json.dumps(settings))
        return {"GEMINI_API_KEY": "fake-key", "GOOGLE_GEMINI_BASE_URL": url}
    raise ValueError(f"no fake-model settings for harness {harness!r}")


if __name__ == "__main__":  # pragma: no cover - used by .ci/run, with PYTHONPATH=src and no pytest
    for name in sys.argv[1:] or list(REAL_AGENTS):
        installed = install(name)
        print(f"{name}: {installed.package}@{installed.version} in {installed.folder}")
