"""Real model providers: OpenAI Chat Completions and Responses (corral's own clients) and
Anthropic Messages (over pydantic-ai).

This package is imported lazily (by the registry, when a model is created), so
commands that need no model start without it. The Chat Completions and Responses
clients (`_chat`, `_responses`, sharing `_wire`) import no SDK; only the Anthropic
models and OpenAI's reasoning models on the Responses API import pydantic-ai and the
openai or anthropic SDK, when one is made (`_adapter`, `_convert`).
"""

from ._chat import ChatCompletionsModel
from ._factory import NO_API_KEY, create_provider_model
from ._responses import ResponsesModel

__all__ = ["NO_API_KEY", "ChatCompletionsModel", "ResponsesModel", "create_provider_model"]
