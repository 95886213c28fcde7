"""Prompt tokens of OpenAI chat requests, counted offline with a GGUF model's own tokenizer and
chat template (tools block included), as a server applying that template would see them.

Reads a JSON list of request bodies on stdin and prints a JSON list of token counts. Needs
llama-cpp-python and jinja2; `prompt_weight.py --gguf` runs it with the interpreter that has
them (`--gguf-python`). Only the vocabulary is loaded: no model weights are run.

Run: PYTHON benchmarks/gguf_tokens.py MODEL.gguf < requests.json
"""

from __future__ import annotations

import json
import sys
from typing import Any

import jinja2
from llama_cpp import Llama


def main(argv: list[str]) -> None:
    llm = Llama(model_path=argv[0], vocab_only=True, verbose=False)
    environment = jinja2.Environment(loader=jinja2.BaseLoader())
    environment.policies["json.dumps_kwargs"] = {"ensure_ascii": False}
    template = environment.from_string(llm.metadata["tokenizer.chat_template"])

    def count(request: dict[str, Any]) -> int:
        prompt = template.render(
            messages=request["messages"], tools=request.get("tools"), add_generation_prompt=True
        )
        return len(llm.tokenize(prompt.encode(), add_bos=False, special=True))

    print(json.dumps([count(request) for request in json.load(sys.stdin)]))


if __name__ == "__main__":
    main(sys.argv[1:])
