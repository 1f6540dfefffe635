"""Models: refs, registry, providers, the scripted model, thinking levels, usage and cost.

The scripted model and its script format (with the YAML parser) load on first use: a run against a
real provider never needs them.
"""

from typing import TYPE_CHECKING, Any

from ._cost import calculate_cost, listed_prices, usage_with_total
from ._errors import LlmError, MissingApiKeyError, ModelRefError, ScriptError, UnknownModelError
from ._messages import (
    AgentMessage,
    AgentMessageAdapter,
    AssistantContent,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryMessage,
    CompactionSummaryMessage,
    Cost,
    CustomMessage,
    ImageContent,
    PiModel,
    StopReason,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
    now_ms,
    to_json_dict,
)
from ._model import (
    THINKING_LEVELS,
    ApiKind,
    AssistantMessageEvent,
    DoneEvent,
    ErrorEvent,
    LlmContext,
    MaxTokensField,
    Model,
    ModelInfo,
    ModelPrices,
    StartEvent,
    StreamOptions,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingLevel,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolDefinition,
    as_thinking_level,
)
from ._ratelimit import (
    EndpointKey,
    HostRateLimiter,
    Permit,
    RateLimiter,
    RateLimits,
    RateLimitWait,
    WindowSource,
    current_rate_limiter,
    install_rate_limiter,
    install_window_source,
    parse_retry_after,
    rate_limit_listener,
)
from ._refs import ModelRef, parse_model_ref
from ._registry import BUILTIN_MODELS, DEFAULT_MODELS, ModelRegistry
from ._retry import (
    RETRYABLE_ERROR_PATTERN,
    RetryPolicy,
    error_status,
    is_retryable_error,
    is_retryable_status,
)
from ._thinking import available_thinking_levels, clamp_thinking_level, supports_xhigh

if TYPE_CHECKING:
    from ._script_format import Script, ScriptStep, find_script, list_script_names, load_script_file
    from ._scripted import SCRIPT_CURSOR_FIELD, SCRIPT_LIST_FIELD, ScriptedModel

_ON_FIRST_USE = {
    **dict.fromkeys(
        ("Script", "ScriptStep", "find_script", "list_script_names", "load_script_file"), "_script_format"
    ),
    **dict.fromkeys(("SCRIPT_CURSOR_FIELD", "SCRIPT_LIST_FIELD", "ScriptedModel"), "_scripted"),
}
"""Names whose module is imported when one of them is first read (`__getattr__`)."""


def __getattr__(name: str) -> Any:
    module = _ON_FIRST_USE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BUILTIN_MODELS",
    "DEFAULT_MODELS",
    "RETRYABLE_ERROR_PATTERN",
    "SCRIPT_CURSOR_FIELD",
    "SCRIPT_LIST_FIELD",
    "THINKING_LEVELS",
    "AgentMessage",
    "AgentMessageAdapter",
    "ApiKind",
    "AssistantContent",
    "AssistantMessage",
    "AssistantMessageEvent",
    "BashExecutionMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "Cost",
    "CustomMessage",
    "DoneEvent",
    "EndpointKey",
    "ErrorEvent",
    "HostRateLimiter",
    "ImageContent",
    "LlmContext",
    "LlmError",
    "MaxTokensField",
    "MissingApiKeyError",
    "Model",
    "ModelInfo",
    "ModelPrices",
    "ModelRef",
    "ModelRefError",
    "ModelRegistry",
    "Permit",
    "PiModel",
    "RateLimitWait",
    "RateLimiter",
    "RateLimits",
    "RetryPolicy",
    "Script",
    "ScriptError",
    "ScriptStep",
    "ScriptedModel",
    "StartEvent",
    "StopReason",
    "StreamOptions",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingLevel",
    "ThinkingStartEvent",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolDefinition",
    "ToolResultMessage",
    "UnknownModelError",
    "Usage",
    "UserContent",
    "UserMessage",
    "WindowSource",
    "as_thinking_level",
    "available_thinking_levels",
    "calculate_cost",
    "clamp_thinking_level",
    "current_rate_limiter",
    "error_status",
    "find_script",
    "install_rate_limiter",
    "install_window_source",
    "is_retryable_error",
    "is_retryable_status",
    "list_script_names",
    "listed_prices",
    "load_script_file",
    "now_ms",
    "parse_model_ref",
    "parse_retry_after",
    "rate_limit_listener",
    "supports_xhigh",
    "to_json_dict",
    "usage_with_total",
]
