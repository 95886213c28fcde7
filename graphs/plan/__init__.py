"""The plan and the run's data, as pure functions over the graph state: `decisions` (the
`plan` and `respond` decisions), `numbering` (stable step numbers, what a step may refer to),
`scheduling` (which steps run next, the wave fan-out), `progress` (the no-progress rule),
`tool_steps`, `references` and `own_tools` (plan items that call a tool directly, naming
earlier results and parts of them), `provenance` (where a call's values come from), `echoes`
(steps that copy the instructions), `views` (how plans and results are shown to the model and
to people) and `task_merge` (one task list written by parallel steps)."""
