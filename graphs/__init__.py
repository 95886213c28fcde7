"""LangGraph wiring for replan: graph, nodes, prompts, runtime `Context`, and the CLI."""
