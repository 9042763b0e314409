"""The LLM writer: tool loop, structured document, or auto (see `writer`)."""

from nexus_memory.writer.llm.episode import render_episode
from nexus_memory.writer.llm.model_tools import OPENAI_TOOLS, TOOL_NAMES, TOOL_SCHEMAS, ModelTools
from nexus_memory.writer.llm.tool_loop import calls_in_content, parse_arguments
from nexus_memory.writer.llm.writer import MODES, LLMWriter

__all__ = [
    "MODES",
    "OPENAI_TOOLS",
    "TOOL_NAMES",
    "TOOL_SCHEMAS",
    "LLMWriter",
    "ModelTools",
    "calls_in_content",
    "parse_arguments",
    "render_episode",
]
