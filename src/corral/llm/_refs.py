"""Model refs: `provider/model[:thinking]`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._errors import ModelRefError
from ._model import ThinkingLevel, as_thinking_level

__all__ = ["ModelRef", "parse_model_ref"]

_PROVIDER_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ModelRef:
    """A parsed model ref."""

    provider: str
    """The part before the first `/`, such as `openai` or `scripted`."""
    model_id: str
    """The rest, without a thinking suffix; may itself contain `/` and `:`."""
    thinking: ThinkingLevel | None = None
    """The `:level` suffix, when the ref has one."""

    @property
    def ref(self) -> str:
        """`provider/model_id`, without the thinking suffix."""
        return f"{self.provider}/{self.model_id}"

    def __str__(self) -> str:
        return self.ref if self.thinking is None else f"{self.ref}:{self.thinking}"


def parse_model_ref(text: str) -> ModelRef:
    """Parse `provider/model[:thinking]`.

    The provider is everything before the first `/`. A trailing `:<level>` is
    a thinking suffix only when `<level>` is one of `off`, `minimal`, `low`,
    `medium`, `high` or `xhigh`; any other `:` belongs to the model id
    (`ollama/qwen3:8b` is model `qwen3:8b`).

    Raises:
        ModelRefError: the text is not of that form.
    """
    stripped = text.strip()
    if "/" not in stripped:
        raise ModelRefError(f"model ref {text!r} must look like provider/model[:thinking], e.g. openai/gpt-5")
    provider, _, rest = stripped.partition("/")
    if not _PROVIDER_RE.match(provider):
        raise ModelRefError(
            f"model ref {text!r} has an invalid provider {provider!r}: use letters, digits, '.', '_' or '-'"
        )
    thinking: ThinkingLevel | None = None
    head, sep, tail = rest.rpartition(":")
    if sep and (level := as_thinking_level(tail)) is not None:
        rest, thinking = head, level
    if not rest or rest != rest.strip() or any(ch.isspace() for ch in rest):
        raise ModelRefError(
            f"model ref {text!r} has an empty or blank model id: use provider/model[:thinking]"
        )
    return ModelRef(provider, rest, thinking)
