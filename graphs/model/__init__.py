"""The model layer, where each server's quirks stay: `client` (building `ChatOpenAI`),
`http_client` (its HTTP clients: retries, unusable replies, request bodies local servers
refuse), `turn` (one model turn), `failures` (what a failed request says), `decision_modes`
(how a decision is asked for and read, fallbacks), `text_calls` (tool calls written as text),
`text_call_middleware` (the same recovery for `create_agent` agents) and `offers` (the tools each
run's executor is offered). Nodes never ask which server answers."""
