"""How the planner and replanner ask a model server for a decision, whatever it supports.

A decision is one of the `DecisionTool`s offered (`plan` with `steps`, `respond` with
`response`), read as that tool's validated arguments. `Context.decision_mode` names the way it
is asked for; each way is a `ModeStrategy` (`strategy`) in its own module here: `tool_required`,
`tool_named`, `json_schema`, `json_object` (`json_reply` holds what the two JSON modes share).
`registry` finds a mode's strategy (`strategy`, `asks_json`); `DECISION_MODES` gives the order
a run falls back through on refusals;
`fallbacks` keeps a run's record of them; `asking.decide` asks for one decision, with
corrections and fallbacks.
"""
