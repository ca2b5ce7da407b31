"""The tool layer: what the agent can do in the workspace, and what it may not (SPEC §5, §6)."""

from nanohermes.core.errors import INTERRUPTED
from nanohermes.tools.base import CallContext, Tool, tool_from_function
from nanohermes.tools.outcomes import cap_output
from nanohermes.tools.runner import ToolRunner

__all__ = ["INTERRUPTED", "CallContext", "Tool", "ToolRunner", "cap_output", "tool_from_function"]
