"""Placeholder: the plan-document tools are being written (issue 4)."""


def plan_tools(*args: object, **kwargs: object) -> list[object]:
    raise NotImplementedError
