"""Model lifecycles: the built-in table agrees with pydantic-ai's catalogue, defaults are current,
`corral models` marks deprecated and retired models, and a deprecated model answers with one notice
(never a failed request), also with warnings turned into errors."""

from __future__ import annotations

import asyncio
import datetime
import importlib
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from corral.agent import ModelNoticeEvent
from corral.llm import BUILTIN_MODELS, DEFAULT_MODELS, ModelRegistry
from corral.llm._lifecycle import BUILTIN_LIFECYCLES, ModelLifecycle, builtin_lifecycle
from corral.settings import Settings
from tests.agent.helpers import Harness

from .fake_server import FakeProviderServer


def _catalogue(provider: str) -> dict[str, object]:
    """pydantic-ai's deprecation catalogue for a provider's own API (a private module: if it moves,
    this test fails and says where to look)."""
    try:
        deprecations = importlib.import_module("pydantic_ai.providers._model_deprecations")
    except ImportError as exc:  # pydantic-ai is a dependency: a moved catalogue must not skip the check
        pytest.fail(
            f"pydantic-ai's deprecation catalogue moved ({exc}); find where `DeprecatedModelWarning`'s "
            "profiles come from and read the tables there"
        )
    table = {"openai": "OPENAI_MODEL_DEPRECATIONS", "anthropic": "ANTHROPIC_MODEL_DEPRECATIONS"}[provider]
    return dict(getattr(deprecations, table))


@pytest.mark.parametrize("info", BUILTIN_MODELS, ids=lambda info: info.ref)
def test_the_builtin_table_agrees_with_pydantic_ais_catalogue(info: object) -> None:
    from corral.llm import ModelInfo

    assert isinstance(info, ModelInfo)
    listed = _catalogue(info.provider).get(info.id)
    ours = builtin_lifecycle(info.provider, info.id)
    if listed is None:
        assert ours is None, f"{info.ref}: the catalogue has no deprecation; drop it from BUILTIN_LIFECYCLES"
        return
    assert ours is not None, (
        f"{info.ref} is deprecated in pydantic-ai's catalogue ({listed}); add it to BUILTIN_LIFECYCLES"
    )
    assert ours.retirement == listed.retirement_date  # type: ignore[attr-defined]
    assert ours.replacement == listed.replacement  # type: ignore[attr-defined]


def test_the_table_names_only_builtin_models() -> None:
    builtin = {(info.provider, info.id) for info in BUILTIN_MODELS}
    assert set(BUILTIN_LIFECYCLES) <= builtin


@pytest.mark.parametrize(("provider", "model_id"), sorted(DEFAULT_MODELS.items()))
def test_a_default_model_is_never_deprecated_or_retired(provider: str, model_id: str) -> None:
    assert builtin_lifecycle(provider, model_id) is None
    assert _catalogue(provider).get(model_id) is None
    assert (provider, model_id) in {(info.provider, info.id) for info in BUILTIN_MODELS}


def test_status_and_notice_name_the_successor() -> None:
    lifecycle = ModelLifecycle(datetime.date(2030, 1, 2), "next-model", "https://example.invalid/notice")
    before = datetime.date(2030, 1, 1)
    assert lifecycle.status(before) == "deprecated"
    assert lifecycle.status(datetime.date(2030, 1, 2)) == "retired"
    text = lifecycle.notice("acme/old-model", before)
    assert "acme/old-model is deprecated" in text and "2030-01-02" in text
    assert "use acme/next-model instead" in text
    retired = lifecycle.notice("acme/old-model", datetime.date(2031, 1, 1))
    assert "was retired by its provider on 2030-01-02" in retired


def _run_models(tmp_path: Path, *args: str) -> str:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.endswith("_API_KEY") and key != "CORRAL_HOME"
    }
    env.update(
        OPENAI_API_KEY="sk-test",
        ANTHROPIC_API_KEY="sk-test",
        CORRAL_HOME=str(tmp_path / "home"),
        XDG_CONFIG_HOME=str(tmp_path / "config"),
    )
    corral = str(Path(sys.executable).with_name("corral"))
    done = subprocess.run(
        [corral, "models", *args], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_corral_models_marks_deprecated_and_retired_models(tmp_path: Path) -> None:
    lines = {line.split()[0]: line for line in _run_models(tmp_path).splitlines()}
    today = datetime.date.today()
    for (provider, model_id), lifecycle in BUILTIN_LIFECYCLES.items():
        line = lines[f"{provider}/{model_id}"]
        assert f"({lifecycle.status(today)}" in line, line
        assert f"use {provider}/{lifecycle.replacement}" in line, line
    for provider, model_id in DEFAULT_MODELS.items():
        assert lines[f"{provider}/{model_id}"].endswith("(default)") or provider != "anthropic"
    current = next(info for info in BUILTIN_MODELS if builtin_lifecycle(info.provider, info.id) is None)
    assert "deprecated" not in lines[current.ref] and "retired" not in lines[current.ref]

    rows = {row["ref"]: row for row in json.loads(_run_models(tmp_path, "--json"))}
    (provider, model_id), lifecycle = next(iter(BUILTIN_LIFECYCLES.items()))
    assert rows[f"{provider}/{model_id}"]["lifecycle"] == {
        "status": lifecycle.status(today),
        "retirement": None if lifecycle.retirement is None else lifecycle.retirement.isoformat(),
        "replacement": lifecycle.replacement,
    }
    assert rows[current.ref]["lifecycle"] is None


def _deprecated_openai_id() -> tuple[str, object]:
    """A model id pydantic-ai's catalogue deprecates, read at test time (no id of ours that retires)."""
    catalogue = _catalogue("openai")
    builtin = {info.id for info in BUILTIN_MODELS}
    model_id = next(name for name in sorted(catalogue) if name.startswith("gpt-") and name not in builtin)
    return model_id, catalogue[model_id]


async def test_a_deprecated_model_answers_with_one_notice_under_warnings_as_errors(tmp_path: Path) -> None:
    """The notice comes with the first request, although the model (and the SDK catalogue that knows
    its deprecation) is built only then; a later request adds none."""
    model_id, listed = _deprecated_openai_id()
    settings = Settings.model_validate({"providers": {"openai": {"models": [{"id": model_id}]}}})
    with FakeProviderServer() as server, warnings.catch_warnings():
        warnings.simplefilter("error")  # as under PYTHONWARNINGS=error, and as the suite's own filter
        registry = ModelRegistry(
            settings, environ={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}, cwd=tmp_path
        )
        model = registry.create_model(registry.resolve(f"openai/{model_id}"))
        agent, recorder = Harness(tmp_path).agent(model)
        for n, prompt in enumerate(("hi", "again"), start=1):
            server.queue_text(f"reply {n}")
            # The bound covers the provider SDK's first import, which takes seconds on a loaded machine.
            await asyncio.wait_for(agent.prompt(prompt), 120)
            replies = [e.message for e in recorder.of("message_end") if e.message.role == "assistant"]
            assert [reply.stop_reason for reply in replies] == ["stop"] * n, [
                r.error_message for r in replies
            ]
            assert len(server.requests) == n
            notices = [event for event in recorder.events if isinstance(event, ModelNoticeEvent)]
            assert len(notices) == 1, notices  # with the first request, and none after it
        assert notices[0].model == f"openai/{model_id}"
        replacement = listed.replacement  # type: ignore[attr-defined]
        if replacement:
            assert f"openai/{replacement}" in notices[0].text
        await model.aclose()  # type: ignore[attr-defined]
