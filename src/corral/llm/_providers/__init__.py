"""Real model providers over pydantic-ai: OpenAI Responses, Chat Completions and Anthropic Messages.

This package is the only place that imports pydantic-ai, openai and anthropic,
and it is itself imported lazily (by the registry, when a model is created),
so commands that need no model start without them.
"""

from ._adapter import PydanticAIModel, normalise_usage
from ._factory import NO_API_KEY, create_provider_model

__all__ = ["NO_API_KEY", "PydanticAIModel", "create_provider_model", "normalise_usage"]
