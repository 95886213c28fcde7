"""LangGraph wiring for replan: nodes, prompts, runtime configuration and the CLI."""
