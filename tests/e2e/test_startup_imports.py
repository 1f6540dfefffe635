"""Start-up cost: a lead with only the `agent` surface never imports the teams core (`Teams` and the
teams tools; the store's teams repositories are not the core), and a scripted run never loads the
price catalogue."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator

import pytest

from tests._ci import unavailable
from tests.llm.fake_server import FakeProviderServer, FakeReply

from .conftest import Env


def _last_line(cli_env: Env, code: str, *flags: str) -> str:
    """Run `code` (a scripted `corral run -p` that prints what it imported) in a fresh interpreter;
    its last line of output."""
    cli_env.script("hello", 'steps:\n  - text: "hello"\n')
    done = cli_env.python(code, *flags)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()[-1]


CODE = """\
import sys
from corral.cli import main
code = main(['run', '--model', 'scripted/hello', '--no-session', '-p', 'hi', *sys.argv[1:]])
core = ('corral.orchestration.teams._teams', 'corral.orchestration.surfaces.teams._tools')
print('teams core imported' if any(m in sys.modules for m in core) else 'teams core not imported')
raise SystemExit(code)
"""


@pytest.mark.parametrize(
    ("flags", "expected"),
    [((), "teams core not imported"), (("--surfaces", "agent,teams"), "teams core imported")],
    ids=["agent-surface", "teams-surface"],
)
def test_the_teams_core_loads_only_for_a_lead_that_uses_it(
    cli_env: Env, flags: tuple[str, ...], expected: str
) -> None:
    assert _last_line(cli_env, CODE, *flags) == expected


PRICES = """\
import sys
from corral.cli import main
code = main(['run', '--model', 'scripted/hello', '--no-session', '-p', 'hi'])
print('genai_prices imported' if 'genai_prices' in sys.modules else 'genai_prices not imported')
raise SystemExit(code)
"""


def test_a_scripted_run_never_loads_the_price_catalogue(cli_env: Env) -> None:
    # Scripted models have configured (zero) prices; the catalogue is for real providers only.
    assert _last_line(cli_env, PRICES) == "genai_prices not imported"


RAY = """\
import sys
from corral.cli import main
code = main(['run', '--model', 'scripted/hello', '--no-session', '-p', 'hi', '--surfaces', 'agent,teams'])
print('ray imported' if 'ray' in sys.modules else 'ray not imported')
raise SystemExit(code)
"""


def test_a_run_that_does_not_use_the_ray_runtime_never_imports_ray(cli_env: Env) -> None:
    # `corral[ray]` is installed by `make test`; only `runtime = "ray"` may load it (~1 s of imports).
    if importlib.util.find_spec("ray") is None:
        unavailable("the ray extra is not installed (make test installs it: '.[test,ray]')")
    assert _last_line(cli_env, RAY) == "ray not imported"


LAZY = (
    # Ray's parts: the launch, the pump, the worker actor, the child's remote store, budgets' facts.
    "corral.runtime._ray",
    "corral.orchestration.host._ray_launch",
    "corral.orchestration.host._ray_pump",
    "corral._ray_worker",
    "corral.orchestration.kernel._remote",
    "corral.orchestration.budgets._remote",
    # Workspaces' snapshot and patch code (its extension is on every host, the rest is not loaded).
    "corral.orchestration.workspaces._snapshot",
    "corral.orchestration.workspaces._apply",
    "corral.orchestration.workspaces._remote",
    "corral.orchestration.workspaces.records",
    # The teams repositories besides the roster (made on first use).
    "corral.orchestration.teams.reports._repository",
    "corral.orchestration.teams.checks._repository",
    "corral.orchestration.teams.repair._repository",
    "corral.orchestration.teams.groups._repository",
    "corral.orchestration.teams.checkpoints._repository",
    "corral.orchestration.teams.messages.repository",
    # The report document and its verification/repair records (loaded with the reports feature).
    "corral.orchestration.teams.reports.records",
    "corral.orchestration.teams.repair.records",
    # The gitignore matcher of the find and grep tools (loaded by the first walk).
    "pathspec",
    # Rules, hooks and MCP servers: only where the settings set them (none here).
    "corral.permissions",
    "corral.hooks",
    "corral.mcp_servers",
    "mcp",
)
LAZY_CODE = f"""\
import sys
from corral.cli import main
code = main(['run', '--model', 'scripted/hello', '--no-session', '-p', 'hi'])
print('loaded:', sorted(m for m in {LAZY!r} if m in sys.modules))
raise SystemExit(code)
"""


def test_a_plain_run_leaves_ray_workspaces_and_unused_teams_repositories_unloaded(cli_env: Env) -> None:
    # Each is a few ms of CPU at every start; none is used by a lead whose agents run in this process.
    assert _last_line(cli_env, LAZY_CODE) == "loaded: []"


@pytest.fixture
def local_model(cli_env: Env, request: pytest.FixtureRequest) -> Iterator[FakeProviderServer]:
    """A fake server on 127.0.0.1, configured as the custom provider `local/bench` speaking the API
    the test's `api` parameter names (Chat Completions when it has none)."""
    api = getattr(request, "param", "openai-chat")
    with FakeProviderServer() as server:
        server.default_reply = FakeReply(text="ok")
        cli_env.settings(
            f'[providers.local]\nbase_url = "{server.base_url}"\napi = "{api}"\n\n'
            '[[providers.local.models]]\nid = "bench"\ncontext_window = 8192\nmax_tokens = 256\n'
        )
        yield server


GC = """\
import atexit, gc, sys

first = []
running = []


def seen(phase, info):
    # The first automatic collection once the command runs: were the start-up's objects frozen before
    # it, and was the provider's client imported by then? (Importing corral.cli itself comes before.)
    if phase == "start" and running and not first:
        first.append((gc.get_freeze_count(), "corral.llm._providers._chat" in sys.modules))


gc.callbacks.append(seen)


@atexit.register
def report():
    frozen, sdk = first[0] if first else (0, False)
    print(f"first collection: frozen={frozen > 0} sdk={sdk}; enabled at exit: {gc.isenabled()}")


sys.argv = ["corral", *sys.argv[1:]]
from corral.cli import console_main

running.append(True)
console_main()
"""


@pytest.mark.parametrize(
    ("model", "sdk"), [("local/bench", True), ("scripted/hello", False)], ids=["provider", "scripted"]
)
def test_the_collector_first_runs_after_start_up_froze_its_objects(
    cli_env: Env, local_model: FakeProviderServer, model: str, sdk: bool
) -> None:
    # Start-up (corral's imports, the provider's client, the launch) runs without the cyclic garbage
    # collector; it comes back once the agent exists and the client is imported, with everything made
    # so far frozen out of its generations.
    line = _last_line(cli_env, GC, "run", "--model", model, "--no-session", "-p", "hi")
    assert line == f"first collection: frozen=True sdk={sdk}; enabled at exit: True"
    assert len(local_model.requests) == (1 if sdk else 0)


def test_a_program_calling_main_keeps_its_collector(cli_env: Env) -> None:
    # The pause is the console script's: `main()` called from a program neither pauses nor freezes.
    code = """\
import gc, sys
from corral.cli import main
gc.disable()
code = main(['run', '--model', 'scripted/hello', '--no-session', '-p', 'hi'])
print(f"enabled: {gc.isenabled()} frozen: {gc.get_freeze_count() > 0}")
raise SystemExit(code)
"""
    assert _last_line(cli_env, code) == "enabled: False frozen: False"


FIRST_REQUEST = """\
import sys

# genai-prices' price table; the scripted model and its script format (a real provider needs neither);
# YAML (read with the first agent definition file, none here); pydantic-ai and the SDKs (corral speaks
# Chat Completions and the Responses API itself).
NEVER = ("genai_prices.data", "corral.llm._scripted", "corral.llm._script_format", "yaml")
NO_SDK = ("pydantic_ai", "openai", "anthropic", "pydantic_graph", "griffe")

seen = []


def loaded():
    return sorted(m for m in sys.modules if m in NEVER or m.split(".")[0] in NO_SDK)


def connecting(event, args):
    # The first connection to the model's server: what is loaded when the first request goes out.
    if event == "socket.connect" and not seen:
        seen.append(loaded())


sys.addaudithook(connecting)
from corral.cli import main

code = main(["run", "--model", "local/bench", "--no-session", "-p", "hi"])
print("loaded at the first request:", seen[0] if seen else None, "at exit:", [m for m in loaded() if m not in NEVER])
raise SystemExit(code)
"""


@pytest.mark.parametrize("local_model", ["openai-chat", "openai-responses"], indirect=True)
def test_the_first_request_goes_out_without_the_price_table_the_scripted_model_or_an_sdk(
    cli_env: Env, local_model: FakeProviderServer
) -> None:
    # corral prices a reply after it arrives, so the first request goes out without genai-prices'
    # table; the scripted model's modules and YAML load on first use only. A Chat Completions or
    # Responses model (other than OpenAI's reasoning models) is corral's own client: neither
    # pydantic-ai nor the openai SDK is imported, then or later.
    assert _last_line(cli_env, FIRST_REQUEST) == "loaded at the first request: [] at exit: []"
    assert len(local_model.requests) == 1
    assert local_model.requests[0].path.endswith(("/chat/completions", "/responses"))
