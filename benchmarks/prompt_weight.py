"""Prompt weight: the size of the executor's first model request, for each `Context.task_tools`.

On a CPU server every prompt token is paid before the first output token, and the task tools'
schemas are most of the executor's first request. For each choice (`full`, `compact`, `none`)
the script runs replan through `ChatOpenAI` against the scripted OpenAI-compatible server of the
test suite and keeps the executor's first request as the server received it (a run with no
tools at all, `none` without `--user-tools`, plans nothing: its row is the one request that
answers it); the baseline is the executor of LangGraph's plan-and-execute tutorial (a ReAct
agent with no tools, see `benchmarks/tutorial.py`) given the same plan.

Offline it prints characters of the JSON request (all of it, and its `tools`). Prompt tokens
come from one of:
- `--base-url` of a real OpenAI-compatible server: each kept request is sent there with
  `max_tokens=1`, and `usage.prompt_tokens` is printed with the seconds the request took (a
  server that caches prompt prefixes, such as llama-server, answers a repeated head faster);
- `--gguf MODEL.gguf`: the model's own tokenizer and chat template count them, offline, through
  `gguf_tokens.py` run by `--gguf-python` (an interpreter with llama-cpp-python and jinja2).

Run: python benchmarks/prompt_weight.py [--language en|zh] [--user-tools N]
     [--base-url http://127.0.0.1:8090/v1 --model qwen | --gguf M.gguf --gguf-python PYTHON]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from pydantic import SecretStr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # `benchmarks` and the `tests` helpers

from benchmarks.tutorial import tutorial_agent, tutorial_ask  # noqa: E402
from replan.graphs.context import TASK_TOOLS_CHOICES, Context  # noqa: E402
from replan.graphs.plan_execute import build_plan_execute_graph  # noqa: E402
from replan.testing import MODEL_ID, ScriptedOpenAIServer  # noqa: E402
from replan.testing import plan_script as script  # noqa: E402
from replan.tools.task_descriptions import LANGUAGES, Language  # noqa: E402

OBJECTIVE = "Compare three Python task queues and recommend one in 3 steps"
TUTORIAL = "tutorial"
"""Row name of the baseline: the tutorial's executor, no tools."""


@tool
def web_search(query: str) -> str:
    """Search the web and return the top results as text."""
    return f"(results for {query})"


@dataclass(frozen=True)
class Weight:
    """One kept request and, when a real server was asked, its prompt tokens and seconds."""

    request: dict[str, Any]
    tokens: int | None = None
    seconds: float | None = None

    @property
    def chars(self) -> int:
        """Characters of the request's JSON."""
        return len(json.dumps(self.request, ensure_ascii=False))

    @property
    def tool_chars(self) -> int:
        """Characters of its `tools` (0 without any)."""
        return (
            len(json.dumps(self.request["tools"], ensure_ascii=False))
            if "tools" in self.request
            else 0
        )


def _scripted_model(server: ScriptedOpenAIServer) -> ChatOpenAI:
    return ChatOpenAI(
        model=MODEL_ID, base_url=server.base_url, api_key=SecretStr("scripted"), temperature=0
    )


def first_requests(language: Language, user_tools: Sequence[BaseTool]) -> dict[str, dict[str, Any]]:
    """The executor's first request for each `task_tools` choice, and the tutorial's."""
    kept: dict[str, dict[str, Any]] = {}
    plan: list[str] = []
    with ScriptedOpenAIServer(script.respond) as server:
        graph = build_plan_execute_graph(_scripted_model(server), user_tools, language=language)
        for choice in TASK_TOOLS_CHOICES:
            seen = len(server.requests)
            result = graph.invoke(
                {"messages": [("user", OBJECTIVE)]}, context=Context(task_tools=choice)
            )
            plan = plan or [done["step"] for done in result["executed_steps"]]
            roles = {script.classify(r).role: r for r in reversed(server.requests[seen:])}
            kept[choice] = roles.get("executor") or roles["answer"]  # no tools: answered at once
        seen = len(server.requests)
        tutorial_agent(_scripted_model(server)).invoke({"messages": [("user", tutorial_ask(plan))]})
        kept[TUTORIAL] = server.requests[seen]
    return kept


class ServerError(Exception):
    """The real server did not answer a request with its prompt tokens."""


def count_tokens(base_url: str, model: str, request: dict[str, Any]) -> tuple[int, float]:
    """Prompt tokens of `request` on a real server (a 1-token completion), and its seconds."""
    body = {key: value for key, value in request.items() if key not in ("stream", "stream_options")}
    body.update(model=model, max_tokens=1)
    key = os.environ.get("OPENAI_API_KEY") or "local"
    ask = urllib.request.Request(
        base_url.rstrip("/") + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    started = time.perf_counter()
    try:
        with urllib.request.urlopen(ask, timeout=600) as answer:
            tokens = int(json.load(answer)["usage"]["prompt_tokens"])
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise ServerError(f"{base_url}: no prompt token count ({error!r})") from None
    return tokens, time.perf_counter() - started


def gguf_tokens(model: str, python: str, requests: list[dict[str, Any]]) -> list[int]:
    """Prompt tokens of `requests` by the GGUF model's tokenizer and chat template."""
    done = subprocess.run(
        [python, str(HERE / "gguf_tokens.py"), model],
        input=json.dumps(requests),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ServerError(f"{model}: no prompt token count ({last})")
    counts: list[int] = json.loads(done.stdout)
    return counts


def table(weights: dict[str, Weight]) -> str:
    """The figures side by side, with ratios to the tutorial and to `full`."""
    base, full = weights[TUTORIAL], weights["full"]
    has_tokens = base.tokens is not None
    head = f"{'executor':<10} {'JSON chars':>10} {'tools':>6} {'/tutorial':>9} {'/full':>6}"
    if has_tokens:
        head += f" {'tokens':>7} {'/tutorial':>9} {'/full':>6}"
        head += f" {'seconds':>7}" if base.seconds is not None else ""
    lines = [head]
    for name, weight in weights.items():
        line = (
            f"{name:<10} {weight.chars:>10,} {weight.tool_chars:>6,} "
            f"{'x' + format(weight.chars / base.chars, '.2f'):>9} "
            f"{'x' + format(weight.chars / full.chars, '.2f'):>6}"
        )
        if weight.tokens is not None and base.tokens and full.tokens:
            line += (
                f" {weight.tokens:>7,} {'x' + format(weight.tokens / base.tokens, '.2f'):>9} "
                f"{'x' + format(weight.tokens / full.tokens, '.2f'):>6}"
            )
        if weight.seconds is not None:
            line += f" {weight.seconds:>7.1f}"
        lines.append(line)
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", choices=LANGUAGES, default="en")
    parser.add_argument(
        "--user-tools", type=int, choices=(0, 1), default=0, help="add one tool of the caller's"
    )
    parser.add_argument("--base-url", help="a real OpenAI-compatible server: count tokens there")
    parser.add_argument("--model", default="qwen", help="model name on --base-url")
    parser.add_argument("--gguf", help="count tokens offline with this GGUF model's tokenizer")
    parser.add_argument(
        "--gguf-python", default=sys.executable, help="interpreter with llama-cpp-python"
    )
    args = parser.parse_args(argv)
    requests = first_requests(args.language, [web_search] * args.user_tools)
    weights = {name: Weight(request) for name, request in requests.items()}
    if args.base_url:
        try:
            weights = {
                name: Weight(w.request, *count_tokens(args.base_url, args.model, w.request))
                for name, w in weights.items()
            }
        except ServerError as error:
            sys.exit(f"prompt_weight: {error}")
    elif args.gguf:
        try:
            counts = gguf_tokens(args.gguf, args.gguf_python, list(requests.values()))
        except ServerError as error:
            sys.exit(f"prompt_weight: {error}")
        weights = {
            name: Weight(w.request, n) for (name, w), n in zip(weights.items(), counts, strict=True)
        }
    print(table(weights))
    if args.gguf and not args.base_url:
        print("(tokens by the model's tokenizer and chat template, counted offline)")
    elif not args.base_url:
        print("(characters only: give --base-url or --gguf for prompt tokens)")


if __name__ == "__main__":
    main()
