"""The `activityColors` palette (settings, theme) and the activity card's header and aggregate line."""

from __future__ import annotations

import pytest
from rich.text import Text

from corral.settings import ActivityColorsSettings, SettingsError, load_settings
from corral.tui._format import ActivityRow
from corral.tui._palette import DARK_DEFAULTS, LIGHT_DEFAULTS, resolve_palette, tier_level
from corral.tui.widgets import ActivityCard
from corral.tui.widgets._status import render_activity

from .conftest import SIZE, TuiEnv, wait_until


def test_palette_defaults_follow_the_theme_and_settings_override_them() -> None:
    assert resolve_palette(ActivityColorsSettings(), dark=True, warning=None, error=None) == DARK_DEFAULTS
    light = resolve_palette(ActivityColorsSettings(), dark=False, warning="#aa8800", error=None)
    assert light.names == LIGHT_DEFAULTS.names and light.warning == "#aa8800"
    custom = resolve_palette(
        # Settings refuse an unknown name; built unchecked, the palette still falls back.
        ActivityColorsSettings.model_construct(
            names="red", tier=["#111111", "#222222"], error="nosuchcolour"
        ),
        dark=True,
        error="#ff0000",
    )
    assert custom.names == "red"
    assert custom.tier == ("#111111", "#222222", "#222222", "#222222")
    assert custom.error == "#ff0000"  # a colour Rich cannot parse falls back to the theme's
    assert [
        tier_level(t) for t in ("read-collect", "write-feature", "read-analyze", "write-critical", "x")
    ] == [
        1,
        2,
        3,
        4,
        0,
    ]
    assert custom.tier_color(4) == "#222222" and custom.tier_color(0) == custom.text


def _styles(text: Text, fragment: str) -> set[str]:
    start = text.plain.index(fragment)
    return {str(span.style) for span in text.spans if span.start <= start < span.end}


def test_rows_use_the_palette_and_many_rows_collapse_to_an_aggregate() -> None:
    palette = resolve_palette(ActivityColorsSettings(names="#010203", model="#040506", thinking="#070809"))
    row = ActivityRow(
        "scan",
        "read-critical",
        "working",
        tokens="180.0k tok (91%)",
        kind="read",
        run_id="r1",
        model="openai/gpt-5",
        thinking="high",
        context_percent=91.0,
    )
    text = render_activity([row], palette)
    assert text.plain.splitlines()[0] == "agent activity  1 active · 1 read · 0 write · ↓ navigate"
    assert "bold #010203" in _styles(text, "scan")
    assert "#040506" in _styles(text, "openai/gpt-5")
    assert "#070809" in _styles(text, "high")
    assert palette.tier[3] in _styles(text, "read-critical")
    assert f"bold {palette.error}" in _styles(text, "180.0k tok (91%)")
    states = ["working"] * 5 + ["thinking"] * 3 + ["waiting"] * 2 + ["queued", "stalled", "stopping"]
    rows = [ActivityRow(f"a{i}", "read-review", s, kind="read") for i, s in enumerate(states)]
    lines = render_activity(rows, palette).plain.splitlines()
    assert lines == [
        "agent activity  12 active · 12 read · 0 write · 1 queued · ↓ navigate",
        "13 agents: 5 working · 3 thinking · 2 waiting · 1 queued +2 states",
    ]
    managed = render_activity([ActivityRow("scout", "scout", "working")], palette).plain.splitlines()[0]
    assert managed == "agent activity  1 active · 1 managed · ↓ navigate"
    mixed = [
        ActivityRow("scout", "scout", "working"),
        ActivityRow("old", "scout", "lost"),
        ActivityRow("scan", "read-review", "thinking", kind="read", run_id="r9"),
    ]
    header = render_activity(mixed, palette).plain.splitlines()[0]
    assert header == "agent activity  2 active · 1 read · 0 write · 2 managed · 1 lost · ↓ navigate"


async def test_the_app_takes_the_palette_from_settings_and_the_theme(tui_env: TuiEnv) -> None:
    tui_env.settings('[activity_colors]\nnames = "#123456"\n')
    app = tui_env.app(tui_env.script("p", 'steps:\n  - text: "ok"\n'))
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: app.launched is not None)
        assert app.palette.names == "#123456" and app.palette.model == DARK_DEFAULTS.model
        assert app.query_one(ActivityCard).palette is app.palette
        app.theme = "textual-light"
        await wait_until(pilot, lambda: app.palette.model == LIGHT_DEFAULTS.model)
        assert app.palette.names == "#123456"
        assert app.chat.palette is app.palette


def test_a_bad_colour_is_a_settings_error_naming_the_key(tui_env: TuiEnv) -> None:
    tui_env.settings('[activity_colors]\ntier = ["#ffd6e8", "not a colour"]\n')
    with pytest.raises(SettingsError, match=r"activity_colors\.tier.*'not a colour' is not a colour"):
        load_settings(None)
    tui_env.settings('[activity_colors]\nshade = "red"\n')
    with pytest.raises(SettingsError, match=r"activity_colors\.shade"):
        load_settings(None)


def test_an_unknown_colour_name_is_a_settings_error_naming_the_key(tui_env: TuiEnv) -> None:
    """Issue 28: any lowercase word passed (`names = "blurple"`, `tier = ["notacolour"]`) and was
    silently ignored; a name must be one Rich knows, and the error names the key and what to use."""
    tui_env.settings('[activity_colors]\nnames = "blurple"\n')
    with pytest.raises(
        SettingsError,
        match=r"'activity_colors\.names'.*'blurple' is not a colour: did you mean 'purple'\? use #rrggbb",
    ) as info:
        load_settings(None)
    assert "rich.readthedocs.io" in str(info.value) and "\n" not in str(info.value)
    tui_env.settings('[activity_colors]\ntier = ["#ffd6e8", "notacolour"]\n')
    with pytest.raises(SettingsError, match=r"'activity_colors\.tier'.*'notacolour' is not a colour"):
        load_settings(None)
    tui_env.settings(
        '[activity_colors]\nnames = "bright_red"\nmessages = "grey50"\ntier = ["#abc", "rgb(1, 2, 3)"]\n'
    )
    colors = load_settings(None).activity_colors
    assert (colors.names, colors.messages, colors.tier) == ("bright_red", "grey50", ["#abc", "rgb(1, 2, 3)"])


def test_a_short_hex_colour_is_used_not_dropped() -> None:
    """`#rgb` is documented; Rich parses only `#rrggbb`, so the palette expands it rather than falling back."""
    palette = resolve_palette(ActivityColorsSettings(names="#abc"), dark=True)
    assert palette.names == "#aabbcc"
