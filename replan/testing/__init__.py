"""Test your graphs and tools offline: a scripted OpenAI-compatible chat server.

`ScriptedOpenAIServer` listens on 127.0.0.1 and answers `POST /v1/chat/completions` (plain and
streamed) the way an OpenAI-compatible server does, with replies you queue (`push`) or a
`responder(request) -> Reply` function computes. Point `ChatOpenAI(base_url=server.url)` at it
and the real client path runs: requests, forced tool choice, streaming, usage, concurrency::

    from langchain_openai import ChatOpenAI
    from replan.testing import ScriptedOpenAIServer, text, tool_call

    with ScriptedOpenAIServer() as server:
        server.push(tool_call("plan", {"steps": ["Look it up"]}), text("done"))
        model = ChatOpenAI(model="scripted", base_url=server.base_url, api_key="test")
        ...

`Quirks` make it answer as a local server does (`LLAMA_CPP`, `LLAMA_CPP_PYTHON`, `OLLAMA`
presets: refused tool choices, calls written as text, ignored `tool_choice`...).
`replan.testing.requests` reads requests for responders; `replan.testing.plan_script` is a
complete scripted model for replan's own graph ("ship it in 3 steps").
"""

from replan.testing.quirks import (
    LLAMA_CPP,
    LLAMA_CPP_PYTHON,
    OLLAMA,
    PRESETS,
    RUN_ON_CONTEXT_TOKENS,
    CallsAsText,
    Quirks,
)
from replan.testing.replies import (
    BROKEN_REPLIES,
    MODEL_ID,
    Reply,
    Responder,
    ToolCallSpec,
    http_error,
    raw,
    reported_usage,
    text,
    tokens,
    tool_call,
    tool_calls,
)
from replan.testing.server import ScriptedOpenAIServer

__all__ = [
    "BROKEN_REPLIES",
    "LLAMA_CPP",
    "LLAMA_CPP_PYTHON",
    "MODEL_ID",
    "OLLAMA",
    "PRESETS",
    "RUN_ON_CONTEXT_TOKENS",
    "CallsAsText",
    "Quirks",
    "Reply",
    "Responder",
    "ScriptedOpenAIServer",
    "ToolCallSpec",
    "http_error",
    "raw",
    "reported_usage",
    "text",
    "tokens",
    "tool_call",
    "tool_calls",
]
