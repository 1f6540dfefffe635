"""Model lifecycles: which models their provider has deprecated or retired, and what replaces them.

Providers retire models on a schedule (OpenAI's and Anthropic's deprecation pages). corral keeps
the schedule of its built-in models here, in a small table that `corral models` and the default
model choice read without importing any provider SDK; a test compares it with pydantic-ai's
catalogue of deprecations (`tests/llm/test_lifecycle.py`), so a newer catalogue that dates
another built-in model fails the suite instead of surprising a user. For a model the table does
not know (one from settings that a provider serves), the provider layer reads the same catalogue
through pydantic-ai's profile when the model is built (`_providers/_factory.py`), or, for a Chat
Completions model of OpenAI's own endpoint, when its lifecycle is first asked for (`_providers/_chat.py`).

A deprecated model still answers: a request to it is never refused or failed by corral. The
agent says so once per session with a `ModelNoticeEvent` naming the successor, and front ends show
it (`corral run` prints it on stderr as a warning, the app as a notice).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Literal

__all__ = ["BUILTIN_LIFECYCLES", "LifecycleStatus", "ModelLifecycle", "builtin_lifecycle"]

LifecycleStatus = Literal["deprecated", "retired"]
"""`deprecated`: announced, still served; `retired`: past its retirement date."""


@dataclass(frozen=True, slots=True)
class ModelLifecycle:
    """A provider's deprecation of one model on its own API."""

    retirement: datetime.date | None
    """The day the provider stops serving the model (or reroutes it), `None` when not announced."""
    replacement: str | None
    """The model id the provider recommends instead (same provider), `None` when it names none."""
    source_url: str = ""
    """The provider's announcement."""

    @classmethod
    def from_deprecation(cls, deprecation: object) -> ModelLifecycle:
        """A deprecation as pydantic-ai's catalogue records one (`retirement_date`, `replacement`,
        `source_url`), read by attribute so a release of another shape gives what it has."""
        return cls(
            retirement=getattr(deprecation, "retirement_date", None),
            replacement=getattr(deprecation, "replacement", None),
            source_url=getattr(deprecation, "source_url", "") or "",
        )

    def status(self, today: datetime.date | None = None) -> LifecycleStatus:
        """`retired` on and after the retirement date, else `deprecated`."""
        day = today or datetime.date.today()
        if self.retirement is not None and day >= self.retirement:
            return "retired"
        return "deprecated"

    def notice(self, ref: str, today: datetime.date | None = None) -> str:
        """One line for a person: what happened to `ref` and what to use instead."""
        status = self.status(today)
        if status == "retired":
            when = f"was retired by its provider on {self.retirement.isoformat()}" if self.retirement else ""
            text = f"model {ref} {when or 'is retired by its provider'}; requests to it may fail"
        elif self.retirement is not None:
            text = f"model {ref} is deprecated by its provider and retires on {self.retirement.isoformat()}"
        else:
            text = f"model {ref} is deprecated by its provider"
        if self.replacement:
            provider = ref.split("/", 1)[0] if "/" in ref else ""
            successor = f"{provider}/{self.replacement}" if provider else self.replacement
            text += f"; use {successor} instead (--model {successor} or default_model in settings)"
        if self.source_url:
            text += f" — {self.source_url}"
        return text


_OPENAI_2026_06 = (
    "https://developers.openai.com/api/docs/deprecations#2026-06-11-gpt-5-and-o3-model-deprecations"
)
_OPENAI_2026_10 = (
    "https://developers.openai.com/api/docs/deprecations#2026-10-01-gpt-53-codex-gpt-51-gpt-54-nano"
)
_ANTHROPIC = "https://platform.claude.com/docs/en/about-claude/model-deprecations#deprecation-history"

BUILTIN_LIFECYCLES: dict[tuple[str, str], ModelLifecycle] = {
    ("openai", "gpt-5"): ModelLifecycle(datetime.date(2026, 12, 11), "gpt-6.1-sol", _OPENAI_2026_06),
    ("openai", "gpt-5-mini"): ModelLifecycle(datetime.date(2026, 12, 11), "gpt-6.1-terra", _OPENAI_2026_06),
    ("openai", "gpt-5-nano"): ModelLifecycle(datetime.date(2026, 12, 11), "gpt-6-luna", _OPENAI_2026_06),
    ("openai", "o3"): ModelLifecycle(datetime.date(2026, 12, 11), "gpt-6.1-sol", _OPENAI_2026_06),
    ("openai", "o4-mini"): ModelLifecycle(
        datetime.date(2026, 10, 23),
        "gpt-5.6-terra",
        "https://developers.openai.com/api/docs/deprecations",
    ),
    ("openai", "gpt-5.1"): ModelLifecycle(datetime.date(2027, 4, 1), "gpt-6-sol", _OPENAI_2026_10),
    ("anthropic", "claude-opus-4-5"): ModelLifecycle(
        datetime.date(2027, 1, 22), "claude-opus-5-5", _ANTHROPIC
    ),
    ("anthropic", "claude-sonnet-4-5"): ModelLifecycle(
        datetime.date(2026, 11, 30), "claude-sonnet-5-5", _ANTHROPIC
    ),
}
"""The built-in models their providers have deprecated, by (provider, model id). Checked against
pydantic-ai's catalogue by `tests/llm/test_lifecycle.py`; raise the lock (`make latest`) to learn of
new deprecations."""


def builtin_lifecycle(provider: str, model_id: str) -> ModelLifecycle | None:
    """The lifecycle of a built-in provider's model, `None` when it is current (or unknown)."""
    return BUILTIN_LIFECYCLES.get((provider, model_id))
