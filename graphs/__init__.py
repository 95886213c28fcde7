"""LangGraph wiring for replan: the plan–execute–replan graph, its nodes, prompts, runtime
`Context`, persistence and the `replan` command line.

Typical use::

    from langgraph.checkpoint.memory import InMemorySaver
    from replan.graphs.context import Context
    from replan.graphs.plan_execute import build_plan_execute_graph

    graph = build_plan_execute_graph(tools=[my_tool], checkpointer=InMemorySaver())
    graph.invoke({"messages": [("user", "Compare three task queues")]},
                 {"configurable": {"thread_id": "1"}}, context=Context(model="gpt-4o-mini"))

The modules, from the graph down:

- `plan_execute`: builds and compiles the graph (`build_plan_execute_graph`, `graph`).
- `planner` (planner and replanner nodes), `executor` (one plan step: a tool step run directly,
  or a model's tool loop; and the `wave` of steps that can start), `answer` (the plain-text
  final answer), `review` (the human plan review): the nodes.
- `schema` (state schemas), `plan_rules` (which steps can start or are left, no-progress
  rule), `step_numbers` (stable step numbers and what a plan item may refer to), `tool_steps`
  (tool-step schemas, `$N` references, reused calls), `briefings` (what prompts show of a run),
  `task_merge` (one task list written by parallel steps): the graph's data.
- `prompts` (every text the model reads), `context` (`Context`: what a run may change, and
  `Bounds`).
- The model layer, where each server's quirks stay: `chat_model` (building `ChatOpenAI`, one
  model turn, errors), `decision_modes` (how a decision is asked for and read, fallbacks),
  `text_calls` (tool calls written as text), `tool_offers` (the executor's tools per run),
  `model_node` (what model nodes are built with), `node_driver` (one node body for sync and
  async runs, usage metering), `server_check` (`replan check`'s probes).
- `persistence` (SQLite/PostgreSQL checkpointers, checkpoint serializer), `dev_checkpointer`
  (the `langgraph dev` saver), `served` (the graphs Aegra serves, see aegra.json), `errors`
  (what the graph raises), `tool_loading` (tools named as `PATH.py:NAME` or
  `package.module:NAME`, for `replan run --tools`).
- `cli/`: the `replan` command (`main`, `parser`, `commands`, `check`, `output`, `progress`,
  `display`, `summary`).
"""
