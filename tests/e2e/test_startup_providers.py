"""Start-up never waits on a provider's SDK (issue 28.6): importing pydantic-ai with the openai or
anthropic SDK costs about 2 s of CPU. `corral models` and `corral doctor` never import it, and the
terminal app paints its first frame before the lead (and with it that import) starts.

Each check runs in a fresh interpreter, since this test process may have imported the SDKs already.
"""

from __future__ import annotations

import json

import pytest

from .conftest import Env

PROVIDER_MODULES = (
    "corral.llm._providers",
    "pydantic_ai.models",
    "pydantic_ai.models.openai",
    "pydantic_ai.models.anthropic",
    "pydantic_ai.providers.openai",
    "openai",
    "anthropic",
)

SETTINGS = """\
default_model = "local/fake"

[providers.local]
base_url = "http://127.0.0.1:9/v1"
api = "openai-chat"

[[providers.local.models]]
id = "fake"
"""
"""A configured local Chat Completions endpoint (nothing listens: doctor's probe is refused at once)."""


def _run(cli_env: Env, code: str, *args: str) -> dict[str, object]:
    cli_env.settings(SETTINGS)
    keys = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test"}
    done = cli_env.python(code, *args, env=keys, timeout=120)
    lines = done.stdout.strip().splitlines()
    assert lines and lines[-1].startswith("{"), (done.stdout, done.stderr)
    result: dict[str, object] = json.loads(lines[-1])
    return result


COMMAND = f"""\
import json, sys
from corral.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:
    code = exc.code
print()
print(json.dumps({{"code": code, "imported": [m for m in {PROVIDER_MODULES!r} if m in sys.modules]}}))
"""


@pytest.mark.parametrize("argv", [("models",), ("models", "--json"), ("doctor",), ("doctor", "--json")])
def test_models_and_doctor_never_import_a_provider_sdk(cli_env: Env, argv: tuple[str, ...]) -> None:
    result = _run(cli_env, COMMAND, *argv)
    assert result["imported"] == [], result
    assert result["code"] in (0, 1, None), result  # doctor fails the refused endpoint: exit 1


APP = f"""\
import asyncio, json, sys, threading
from pathlib import Path
from corral._cli._launch import LaunchOptions, launch_session
from corral.tui import CorralApp

frames = []
seen = {{}}
display = CorralApp._display

def counting(self, screen, renderable):
    if renderable is not None:
        frames.append(1)
    display(self, screen, renderable)

CorralApp._display = counting

def launcher(options):
    seen["frames"] = len(frames)
    seen["imported"] = [m for m in {PROVIDER_MODULES!r} if m in sys.modules]
    seen["sdk_thread"] = any(t.name == "corral-sdk-import" for t in threading.enumerate())
    return launch_session(options)

async def main():
    app = CorralApp(LaunchOptions(Path.cwd()), launcher=launcher)
    async with app.run_test(size=(100, 30)) as pilot:
        while getattr(app, "starting", False) or (app.launched is None and app.setup_error is None):
            await pilot.pause()
        seen["model"] = None if app.launched is None else app.launched.model_info.ref
        seen["error"] = app.setup_error

asyncio.run(main())
print(json.dumps(seen))
"""


def test_the_app_paints_before_the_provider_sdk_is_imported(cli_env: Env) -> None:
    result = _run(cli_env, APP)
    assert result["model"] == "local/fake" and result["error"] is None, result
    assert isinstance(result["frames"], int) and result["frames"] >= 1, result  # painted first …
    assert result["imported"] == [] and result["sdk_thread"] is False, result  # … then the SDK loads
