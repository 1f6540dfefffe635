"""Real model providers: OpenAI Chat Completions (corral's own client), OpenAI Responses and
Anthropic Messages (over pydantic-ai).

This package is imported lazily (by the registry, when a model is created), so
commands that need no model start without it. The Chat Completions client
(`_chat`) imports no SDK; only the Responses and Anthropic models import
pydantic-ai and the openai or anthropic SDK, when one is made (`_adapter`,
`_convert`).
"""

from ._chat import ChatCompletionsModel
from ._factory import NO_API_KEY, create_provider_model

__all__ = ["NO_API_KEY", "ChatCompletionsModel", "create_provider_model"]
