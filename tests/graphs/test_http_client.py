"""The HTTP clients under replan's `ChatOpenAI`: they send tool-call messages with "" content,
through public interfaces of openai and httpx2 only."""

from __future__ import annotations

import json

import httpx2
import openai

from replan.graphs.model import http_client

CHAT_URL = "http://127.0.0.1:1/v1/chat/completions"


def test_openai_sends_through_httpx2() -> None:
    """replan's clients extend openai's and rebuild httpx2 requests: if openai moves to another
    HTTP library, graphs/model/http_client.py must move with it."""
    assert issubclass(openai.DefaultHttpxClient, httpx2.Client) and issubclass(
        openai.DefaultAsyncHttpxClient, httpx2.AsyncClient
    ), (
        "openai's default HTTP clients are no longer httpx2's: replan's model clients "
        "(graphs/model/http_client.py) subclass them and retry httpx2's errors"
    )


def test_only_null_assistant_content_of_chat_completion_requests_is_rewritten() -> None:
    messages = [
        {"role": "user", "content": None},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "assistant", "content": "text"},
    ]
    request = httpx2.Request("POST", CHAT_URL, json={"model": "m", "messages": messages})
    sent = http_client._with_empty_assistant_content(request)
    body = json.loads(sent.content)
    assert [m["content"] for m in body["messages"]] == [None, "", "text"]
    assert sent.headers["content-length"] == str(len(sent.content))
    assert sent.url == request.url and sent.headers["content-type"] == "application/json"

    models = httpx2.Request("POST", "http://127.0.0.1:1/v1/models", json={"messages": messages})
    plain = httpx2.Request("POST", CHAT_URL, json={"messages": messages[2:]})
    for unchanged in (models, plain):
        assert http_client._with_empty_assistant_content(unchanged) is unchanged
