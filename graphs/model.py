"""The chat model the graph uses: built at run time from the `Context`, called with clear errors."""

from __future__ import annotations

import os
from collections.abc import Sequence

import openai
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.runnables import Runnable
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

from graphs.context import Context
from graphs.errors import ModelUnavailableError


def chat_model_from_context(context: Context) -> BaseChatModel:
    """A `ChatOpenAI` for `context`; raises `ModelUnavailableError` when no API key is set."""
    api_key = os.environ.get("OPENAI_API_KEY")
    if not api_key:
        raise ModelUnavailableError(
            "OPENAI_API_KEY is not set: export it (any non-empty value works for a local "
            "OpenAI-compatible server such as vLLM, Ollama or llama.cpp)."
        )
    return ChatOpenAI(
        model=context.model,
        temperature=context.temperature,
        base_url=context.base_url or None,
        api_key=SecretStr(api_key),
        max_retries=context.max_retries,
        timeout=context.timeout,
    )


def resolve_model(model: BaseChatModel | None, context: Context | None) -> BaseChatModel:
    """The caller's `model` if given, else a `ChatOpenAI` built from the run's context."""
    return model if model is not None else chat_model_from_context(context or Context())


async def ask_model(
    model: Runnable[LanguageModelInput, BaseMessage], messages: Sequence[BaseMessage]
) -> AIMessage:
    """Call `model` asynchronously (so LangGraph can stream its tokens) and return its reply.

    Connection and authentication failures that survive the client's own retries become a
    `ModelUnavailableError` with a one-line reason.
    """
    try:
        reply = await model.ainvoke(list(messages))
    except openai.APIConnectionError as exc:
        raise ModelUnavailableError(f"cannot reach the model server: {exc}") from exc
    except openai.AuthenticationError as exc:
        raise ModelUnavailableError(f"the model server refused the API key: {exc}") from exc
    if not isinstance(reply, AIMessage):
        raise TypeError(f"expected an AIMessage from the model, got {type(reply).__name__}")
    return reply
