"""The chat model a run talks to: a `ChatOpenAI` built at run time from the run's `Context`
(replan's pooled HTTP clients, `http_client`; the reply limit in the field each server reads),
or the caller's own."""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlsplit

from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from replan.graphs.context import OPENAI_API_URL, OPENAI_HOST, Context
from replan.graphs.errors import ModelUnavailableError
from replan.graphs.model.http_client import async_http_client, sync_http_client


def reply_limit(base_url: str | None, max_tokens: int) -> dict[str, Any]:
    """`ChatOpenAI` arguments bounding each reply to `max_tokens` tokens, in the request field
    the server reads.

    OpenAI's API takes `max_completion_tokens` (what `ChatOpenAI` turns its `max_tokens` into);
    llama-cpp-python's and Ollama's servers read only the older `max_tokens` and ignore the
    other, while llama.cpp's server and vLLM read both. So another server gets `max_tokens`.
    """
    if not base_url or urlsplit(base_url).hostname == OPENAI_HOST:
        return {"max_tokens": max_tokens}
    return {"extra_body": {"max_tokens": max_tokens}}


def require_api_key() -> str:
    """`$OPENAI_API_KEY`, which every `ChatOpenAI` built here needs; `ModelUnavailableError`
    when it is not set (callers may check it before starting anything)."""
    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        raise ModelUnavailableError(
            "OPENAI_API_KEY is not set: export it (any non-empty value works for a local "
            "OpenAI-compatible server such as vLLM, Ollama or llama.cpp)."
        )
    return api_key


def chat_model_from_context(context: Context, max_tokens: int) -> BaseChatModel:
    """A `ChatOpenAI` for `context` whose replies are at most `max_tokens` tokens; raises
    `ModelUnavailableError` when no API key is set."""
    api_key = require_api_key()
    return ChatOpenAI(
        model=context.model,
        temperature=context.temperature,
        base_url=context.base_url or OPENAI_API_URL,  # not the environment's: see the constant
        api_key=SecretStr(api_key),
        max_retries=0,  # the HTTP clients retry, so that each retry can be shown
        timeout=context.timeout,
        http_client=sync_http_client(context.max_retries),
        http_async_client=async_http_client(context.max_retries),
        **reply_limit(context.base_url, max_tokens),
        stream_usage=True,  # streamed replies end with their usage, as plain ones carry it
    )


def resolve_model(model: BaseChatModel | None, context: Context, max_tokens: int) -> BaseChatModel:
    """The caller's `model` if given (as it is: its own settings apply), else a `ChatOpenAI`
    built from the run's context, its replies bounded to `max_tokens` tokens."""
    if model is not None:
        return model
    return chat_model_from_context(context, max_tokens)
