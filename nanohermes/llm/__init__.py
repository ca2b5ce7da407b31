"""The model client: any OpenAI-compatible chat-completions endpoint, over httpx (SPEC §8)."""

from nanohermes.llm.accumulate import ToolCallAccumulator, extract_text_tool_calls
from nanohermes.llm.client import ChatClient

__all__ = ["ChatClient", "ToolCallAccumulator", "extract_text_tool_calls"]
