"""What the model reads about the task tools, in English and Chinese (our own wording)."""

from __future__ import annotations

from typing import Literal, get_args

Language = Literal["en", "zh"]
LANGUAGES: tuple[Language, ...] = ("en", "zh")
Detail = Literal["full", "compact"]
"""How much the model reads about the task tools: "full" (when to plan with tasks, how to write
them, examples) or "compact" (the same tools and arguments, about a third of the text)."""
DETAILS: tuple[Detail, ...] = get_args(Detail)


def check_language(language: object) -> Language:
    """`language` if the tools have descriptions in it; ValueError naming the choices if not."""
    for known in LANGUAGES:
        if language == known:
            return known
    raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")


_WHEN_EN = (
    "Plan with tasks when a request needs three or more distinct steps, when steps depend on "
    "each other, or when the user benefits from seeing progress. Skip tasks entirely for a "
    "single quick action, a factual question or small talk: just do the work."
)
_WHEN_ZH = (
    "当请求需要三个或以上独立步骤、步骤之间存在先后依赖、或者用户需要看到进度时，用任务来规划。"
    "如果只是一个简单动作、一个事实性问题或闲聊，就不要创建任务，直接完成即可。"
)

TOOL_DESCRIPTIONS: dict[Language, dict[str, str]] = {
    "en": {
        "TaskCreate": (
            "Add one task to the shared task list and get its ID back. "
            f"{_WHEN_EN} Give each task a short imperative subject ('Write the parser') and a "
            "description with enough context to do it and to know when it is done. New tasks "
            "start as pending; call once per task, in the order the work should happen."
        ),
        "TaskGet": (
            "Show everything about one task: subject, status, description, active form, owner, "
            "the tasks it blocks, the tasks blocking it, and metadata. Read it before starting "
            "a task whose details you no longer have in view."
        ),
        "TaskUpdate": (
            "Change one task. Mark it in_progress when you start it and completed as soon as it "
            "is really finished (not when it is partly done or failing); set status to deleted "
            "to drop a task that is no longer needed. addBlocks / addBlockedBy record that one "
            "task must finish before another can start; both tasks are updated. Metadata is "
            "merged, and a key set to null is removed. If the call is refused, nothing changes."
        ),
        "TaskList": (
            "List all tasks, one line each: ID, status, subject, owner and unfinished blockers. "
            "Use it to pick the next task: the lowest-numbered pending one with no blockers. "
            f"{_WHEN_EN}"
        ),
    },
    "zh": {
        "TaskCreate": (
            "在共享任务列表中新增一个任务，并返回其 ID。"
            f"{_WHEN_ZH}每个任务用简短的祈使句作为标题（如“编写解析器”），并在描述中写清背景"
            "以及完成标准。新任务的状态为 pending；每个任务调用一次，按工作先后顺序创建。"
        ),
        "TaskGet": (
            "查看单个任务的全部信息：标题、状态、描述、进行时描述、负责人、它阻塞的任务、"
            "阻塞它的任务以及元数据。开始一个细节已不在眼前的任务之前，先读取它。"
        ),
        "TaskUpdate": (
            "修改一个任务。开始时标记为 in_progress，真正完成后立即标记为 completed（部分完成或"
            "仍有错误时不要标记）；不再需要的任务将状态设为 deleted。addBlocks / addBlockedBy "
            "表示某个任务必须先完成、另一个任务才能开始，两端任务都会同步更新。元数据为合并更新，"
            "值为 null 的键会被删除。调用被拒绝时，任何内容都不会改变。"
        ),
        "TaskList": (
            "列出所有任务，每行一个：ID、状态、标题、负责人以及尚未完成的前置任务。"
            f"用它挑选下一个任务：编号最小、状态为 pending 且没有阻塞的任务。{_WHEN_ZH}"
        ),
    },
}

FIELD_DESCRIPTIONS: dict[Language, dict[str, str]] = {
    "en": {
        "subject": "Short imperative title, e.g. 'Run the test suite'.",
        "description": "What to do, with the context needed and how to tell it is done.",
        "activeForm": "Present-continuous label shown while the task runs, e.g. 'Running tests'.",
        "metadata": "Extra key-value pairs to attach; on update, a null value removes the key.",
        "taskId": 'ID of the task, a whole number such as "3".',
        "new_subject": "New title; leave out to keep the current one.",
        "new_description": "New description; leave out to keep the current one.",
        "status": "New status: pending, in_progress, completed, or deleted to remove the task.",
        "addBlocks": "IDs of tasks that cannot start until this one is completed.",
        "addBlockedBy": "IDs of tasks that must be completed before this one can start.",
        "owner": "Name of the agent or person working on the task.",
    },
    "zh": {
        "subject": "简短的祈使句标题，例如“运行测试套件”。",
        "description": "要做什么，包括必要的背景以及如何判断完成。",
        "activeForm": "任务进行中时显示的进行时描述，例如“正在运行测试”。",
        "metadata": "附加的键值对；更新时值为 null 的键会被删除。",
        "taskId": '任务 ID，为整数字符串，例如 "3"。',
        "new_subject": "新标题；不填则保持不变。",
        "new_description": "新描述；不填则保持不变。",
        "status": "新状态：pending、in_progress、completed，或 deleted 表示删除该任务。",
        "addBlocks": "在本任务完成之前无法开始的任务 ID 列表。",
        "addBlockedBy": "必须先完成、本任务才能开始的任务 ID 列表。",
        "owner": "负责该任务的智能体或人员名称。",
    },
}

COMPACT_TOOL_DESCRIPTIONS: dict[Language, dict[str, str]] = {
    "en": {
        "TaskCreate": "Add a pending task to the shared task list; returns its ID.",
        "TaskGet": "Show one task in full.",
        "TaskUpdate": "Change one task; arguments left out stay as they are.",
        "TaskList": "List all tasks: ID, status, subject, owner, open blockers.",
    },
    "zh": {
        "TaskCreate": "向共享任务列表新增一个 pending 任务，返回其 ID。",
        "TaskGet": "查看一个任务的全部信息。",
        "TaskUpdate": "修改一个任务；未给出的参数保持不变。",
        "TaskList": "列出所有任务：ID、状态、标题、负责人、未完成的前置任务。",
    },
}
"""Short tool descriptions for small prompts (`Detail` "compact"): what each tool does."""

COMPACT_FIELD_DESCRIPTIONS: dict[Language, dict[str, str]] = {
    "en": {
        "subject": "Short imperative title.",
        "description": "What to do and how to tell it is done.",
        "activeForm": "Label shown while it runs.",
        "metadata": "Keys to merge in; null removes a key.",
        "taskId": "",
        "new_subject": "",
        "new_description": "",
        "status": "deleted removes the task.",
        "addBlocks": "Tasks that wait for this one.",
        "addBlockedBy": "Tasks this one waits for.",
        "owner": "",
    },
    "zh": {
        "subject": "简短的祈使句标题。",
        "description": "要做什么、如何判断完成。",
        "activeForm": "进行中时显示的描述。",
        "metadata": "合并的键值；null 删除该键。",
        "taskId": "",
        "new_subject": "",
        "new_description": "",
        "status": "deleted 表示删除任务。",
        "addBlocks": "等待本任务完成的任务。",
        "addBlockedBy": "本任务要等待的任务。",
        "owner": "",
    },
}
"""Short argument descriptions that go with `COMPACT_TOOL_DESCRIPTIONS`; none ("") where the
argument's name and type say it all."""

TASK_LIST_PROMPT: dict[Language, str] = {
    "en": (
        "## Task list\n"
        "Your task list as it stands now. It is kept here even when earlier messages are "
        "trimmed or summarised; change it only with the task tools.\n\n{tasks}"
    ),
    "zh": (
        "## 任务列表\n"
        "以下是你当前的任务列表。即使较早的消息被裁剪或总结，它也会一直显示在这里；"
        "只能通过任务工具修改它。\n\n{tasks}"
    ),
}
"""The system-prompt section `TaskToolsMiddleware` adds before each model call."""
