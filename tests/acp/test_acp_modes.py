"""`corral acp` modes (the lead's tool surfaces) and its model, through the ACP SDK's client."""

from __future__ import annotations

from typing import Any

import pytest
from acp.exceptions import RequestError

from .conftest import AcpEnv, text_block

SURFACES = {
    "steps": [
        {
            "expect": {"tools_include": ["agent"], "tools_exclude": ["spawn_agent"]},
            "text": "[agent surface]",
            "otherwise": {"text": "[wrong tools: agent]"},
        },
        {
            "expect": {"tools_exclude": ["agent", "spawn_agent"], "tools_include": ["read"]},
            "text": "[no surface]",
            "otherwise": {"text": "[wrong tools: none]"},
        },
        {
            "expect": {"tools_include": ["spawn_agent"], "tools_exclude": ["agent"]},
            "text": "[teams surface]",
            "otherwise": {"text": "[wrong tools: teams]"},
        },
        {
            "expect": {"tools_include": ["agent", "spawn_agent"]},
            "text": "[both surfaces]",
            "otherwise": {"text": "[wrong tools: both]"},
        },
    ],
    "on_exhausted": "repeat_last",
}
"""`scripted/surfaces`: each turn says which surfaces' tools its request was offered."""


async def test_modes_are_the_surfaces_and_set_mode_switches_the_leads_tools(acp_env: AcpEnv) -> None:
    acp_env.script("surfaces", SURFACES)
    async with acp_env.server(model="scripted/surfaces") as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])
        sid = session.session_id
        assert session.modes is not None
        assert session.modes.current_mode_id == "agent"  # the `surfaces` setting's default
        assert [m.id for m in session.modes.available_modes] == ["agent", "teams", "agent,teams", "none"]

        await conn.prompt(session_id=sid, prompt=[text_block("one")])
        assert recorder.text(sid).endswith("[agent surface]")
        for mode, said in (
            ("none", "[no surface]"),
            ("teams", "[teams surface]"),
            ("agent,teams", "[both surfaces]"),
        ):
            await conn.set_session_mode(session_id=sid, mode_id=mode)
            answer = await conn.prompt(session_id=sid, prompt=[text_block(mode)])
            assert answer.stop_reason == "end_turn"
            assert recorder.text(sid).endswith(said), recorder.text(sid)[-200:]

        with pytest.raises(RequestError) as refused:
            await conn.set_session_mode(session_id=sid, mode_id="plan")
        assert refused.value.code == -32602
        assert "'plan'" in str(refused.value) and "agent, teams, agent,teams, none" in str(refused.value)

        # `session/load` of the open session answers its current mode.
        loaded = await conn.load_session(session_id=sid, cwd=str(acp_env.work), mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "agent,teams"
    # The mode belongs to the open session: a later server reopens it with its `--surfaces`.
    async with acp_env.server("--surfaces", "teams", model="scripted/surfaces") as (conn, _process, _r):
        await conn.initialize(protocol_version=1)
        loaded = await conn.load_session(session_id=sid, cwd=str(acp_env.work), mcp_servers=[])
        assert loaded.modes is not None and loaded.modes.current_mode_id == "teams"
        assert _model_option(loaded.config_options).current_value == "scripted/surfaces"


async def test_a_session_started_without_surfaces_gets_them_from_set_mode(acp_env: AcpEnv) -> None:
    acp_env.script("surfaces", {**SURFACES, "steps": SURFACES["steps"][1:3]})
    async with acp_env.server("--surfaces", "", model="scripted/surfaces") as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])
        sid = session.session_id
        assert session.modes is not None and session.modes.current_mode_id == "none"
        await conn.prompt(session_id=sid, prompt=[text_block("one")])
        assert recorder.text(sid).endswith("[no surface]")
        await conn.set_session_mode(session_id=sid, mode_id="teams")
        await conn.prompt(session_id=sid, prompt=[text_block("two")])
        assert recorder.text(sid).endswith("[teams surface]")


def _model_option(options: list[Any] | None) -> Any:
    (option,) = [o for o in options or [] if getattr(o, "root", o).id == "model"]
    return getattr(option, "root", option)


async def test_the_model_option_offers_the_usable_models_and_switches_the_leads_model(
    acp_env: AcpEnv,
) -> None:
    acp_env.script("one", {"steps": [{"text": "[model one]"}], "on_exhausted": "repeat_last"})
    acp_env.script("two", {"steps": [{"text": "[model two]"}], "on_exhausted": "repeat_last"})
    async with acp_env.server(model="scripted/one") as (conn, _process, recorder):
        await conn.initialize(protocol_version=1)
        session = await conn.new_session(cwd=str(acp_env.work), mcp_servers=[])
        sid = session.session_id
        option = _model_option(session.config_options)
        assert option.category == "model" and option.current_value == "scripted/one"
        values = [o.value for o in option.options]
        assert "scripted/one" in values and "scripted/two" in values

        await conn.prompt(session_id=sid, prompt=[text_block("who?")])
        assert recorder.text(sid).endswith("[model one]")
        answer = await conn.set_config_option(config_id="model", session_id=sid, value="scripted/two")
        assert _model_option(answer.config_options).current_value == "scripted/two"
        await conn.prompt(session_id=sid, prompt=[text_block("who now?")])
        assert recorder.text(sid).endswith("[model two]")

        for config_id, value in (("model", "scripted/nope"), ("colour", "red")):
            with pytest.raises(RequestError) as refused:
                await conn.set_config_option(config_id=config_id, session_id=sid, value=value)
            assert refused.value.code == -32602
            assert repr(value if config_id == "model" else config_id) in str(refused.value)
        # Refused: nothing changed.
        loaded = await conn.load_session(session_id=sid, cwd=str(acp_env.work), mcp_servers=[])
        assert _model_option(loaded.config_options).current_value == "scripted/two"
