"""The graph's nodes, one module each: `planner`, `review` (the human plan review),
`executor` (one step: its `tool_loop` with the model, or a `tool_step` with no model),
`replanner`, `answer`, and `turns` (`start_turn` and `reply`, which open and close a turn of
the conversation); with what they share: `base` (what a model node is built with),
`driver` (one node body for sync and async runs, usage metering) and `report_check` (the
executor's check of a report made without a tool call)."""
