"""LangGraph wiring for replan: the plan–execute–replan graph, its nodes, prompts, model layer
and runtime `Context`.

Typical use::

    from langgraph.checkpoint.memory import InMemorySaver
    from replan import Context, build_plan_execute_graph

    graph = build_plan_execute_graph(tools=[my_tool], checkpointer=InMemorySaver())
    graph.invoke({"messages": [("user", "Compare three task queues")]},
                 {"configurable": {"thread_id": "1"}}, context=Context(model="gpt-4o-mini"))

At the top: `plan_execute` (builds and compiles the graph; `graph` is what `langgraph dev`
serves), `context` (`Context`: what a run may change), `graph_state` (the state schemas and
node names), `conversation` (what a turn reads of its thread), `errors`, `setting_checks`
(values of settings refused in one line), `persistence` (checkpointers), `dev_checkpointer`
(the `langgraph dev` saver) and `served` (the graphs Aegra serves). Below: `nodes/` (one
module per node), `plan/` (the plan and the run's data), `model/` (the model layer) and
`prompts/` (one module per node's texts, reports for people apart). The command line is
`replan.cli`.
"""
