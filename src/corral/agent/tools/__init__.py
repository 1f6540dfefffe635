"""The seven built-in tools: `read`, `bash`, `edit`, `write`, `grep`, `find`, `ls`.

They carry over Pi's parameters, defaults, limits and notice strings (see
`spec/substrate-detail.md` §A.4). Output is capped at 2000 lines or 50 KB
(`truncate_head` for files and search results, `truncate_tail` for command
output); `bash` keeps the full output in a temp file once it is cut. `grep`
and `find` are pure Python and honour `.gitignore`. Build a set with
`create_builtin_tools(cwd)`.
"""

from ._bash import (
    BashTool,
    RunningProcess,
    UserCommandResult,
    aborted_output,
    resolve_shell,
    run_user_command,
)
from ._common import ToolsConfigError, expand_path, resolve_read_path, resolve_to_cwd
from ._edit import EditTool, fuzzy_normalize, generate_diff
from ._find import FindTool
from ._grep import GrepTool
from ._ls import LsTool
from ._read import ReadTool
from ._registry import ALL_TOOL_NAMES, DEFAULT_TOOL_NAMES, READ_ONLY_TOOL_NAMES, create_builtin_tools
from ._sandbox import (
    CREDENTIAL_PATHS,
    PROBE_TIMEOUT_SECONDS,
    SANDBOX_ENV_ALLOWLIST,
    CommandSandbox,
    ReadGuard,
    ReadOnlySandbox,
    SandboxCommand,
    SandboxLimits,
    SandboxPolicy,
    SandboxStatus,
    read_sandbox_policy,
    sandbox_environment,
)
from ._truncate import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_LINES,
    GREP_MAX_LINE_LENGTH,
    TruncationResult,
    format_size,
    truncate_head,
    truncate_line,
    truncate_tail,
)
from ._write import WriteTool

__all__ = [
    "ALL_TOOL_NAMES",
    "CREDENTIAL_PATHS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_LINES",
    "DEFAULT_TOOL_NAMES",
    "GREP_MAX_LINE_LENGTH",
    "PROBE_TIMEOUT_SECONDS",
    "READ_ONLY_TOOL_NAMES",
    "SANDBOX_ENV_ALLOWLIST",
    "BashTool",
    "CommandSandbox",
    "EditTool",
    "FindTool",
    "GrepTool",
    "LsTool",
    "ReadGuard",
    "ReadOnlySandbox",
    "ReadTool",
    "RunningProcess",
    "SandboxCommand",
    "SandboxLimits",
    "SandboxPolicy",
    "SandboxStatus",
    "ToolsConfigError",
    "TruncationResult",
    "UserCommandResult",
    "WriteTool",
    "aborted_output",
    "create_builtin_tools",
    "expand_path",
    "format_size",
    "fuzzy_normalize",
    "generate_diff",
    "read_sandbox_policy",
    "resolve_read_path",
    "resolve_shell",
    "resolve_to_cwd",
    "run_user_command",
    "sandbox_environment",
    "truncate_head",
    "truncate_line",
    "truncate_tail",
]
