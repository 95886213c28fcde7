"""The head every model request of a run starts with: the same system text and the same list
of the run's tools for the planner, the executor, the replanner and the answer, so that a
server that caches the head of the last prompt (llama-server, vLLM and SGLang with prefix
caching, OpenAI above 1,024 tokens) reads it once per run, not once per request."""

from __future__ import annotations

HEAD = """You carry out a user's objective in steps. Tools:
{tools}"""
