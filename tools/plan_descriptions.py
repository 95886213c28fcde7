"""What models read about the plan tools, in English and Chinese: one description per tool and
per argument (our own wording)."""

from replan.state.plans import MAX_CONTENT_SIZE, MAX_NAME_LENGTH, SUGGESTED_STATUSES
from replan.tools.task_descriptions import Language

_EXAMPLES = ", ".join(repr(status) for status in SUGGESTED_STATUSES)

_REVISION_HINT_EN = (
    "Every write raises a plan's revision by one. Pass the revision you last saw as "
    "last_known_revision and the call is refused, changing nothing, if someone else wrote "
    "the plan in between."
)
_REVISION_HINT_ZH = (
    "每次写入都会把计划的版本号加一。把你最后看到的版本号作为 last_known_revision 传入；"
    "如果期间有其他人写过这个计划，调用会被拒绝，且不做任何修改。"
)

TOOL_DESCRIPTIONS: dict[Language, dict[str, str]] = {
    "en": {
        "write_plan": (
            "Create a shared plan (a markdown document other agents can read and edit by name) "
            "or replace the body of an existing one. " + _REVISION_HINT_EN + " Use "
            "last_known_revision=0 to create a plan only if the name is still free. Returns "
            "the plan's details and its new revision, without the body."
        ),
        "read_plan": (
            "Fetch a plan by name: its body, title, author, status and current revision. Keep "
            "the revision: pass it as last_known_revision when you write the plan back."
        ),
        "list_plans": (
            "List every shared plan with its title, author, status and revision (no bodies). "
            "'warnings' names stored plans that could not be read: they exist but are damaged, "
            "so do not recreate them under the same name."
        ),
        "delete_plan": (
            "Delete a plan for everyone. Pass last_known_revision to delete only the version "
            "you have seen."
        ),
        "update_plan_from_file": (
            "Create or replace a plan's body with the text of a file in the workspace (UTF-8, "
            f"at most {MAX_CONTENT_SIZE}). Handy after editing an exported plan: the body does "
            "not have to pass through the conversation. " + _REVISION_HINT_EN
        ),
        "export_plan_to_file": (
            "Write a plan's body to a file in the workspace so it can be edited there; missing "
            "folders are created. An existing file is kept unless overwrite is true. Returns "
            "where it was written, the revision and the byte count, not the body."
        ),
        "set_plan_status": (
            "Change only the status label of an existing plan (the body is untouched and not "
            "returned); the label may not be empty. " + _REVISION_HINT_EN
        ),
        "get_plan_status": "Get a plan's status label and revision, without its body.",
    },
    "zh": {
        "write_plan": (
            "新建一份共享计划（其他智能体可以按名称读取和编辑的 markdown 文档），或替换已有计划的"
            "正文。" + _REVISION_HINT_ZH + "传入 last_known_revision=0 表示仅在该名称尚未被使用时"
            "才创建。返回计划的信息和新的版本号，不含正文。"
        ),
        "read_plan": (
            "按名称读取计划：正文、标题、作者、状态和当前版本号。请记住版本号，写回计划时把它作为 "
            "last_known_revision 传入。"
        ),
        "list_plans": (
            "列出所有共享计划及其标题、作者、状态和版本号（不含正文）。'warnings' 列出无法读取的"
            "已存计划：它们存在但已损坏，不要用同一名称重新创建。"
        ),
        "delete_plan": "为所有人删除一份计划。传入 last_known_revision 则只删除你看到的那个版本。",
        "update_plan_from_file": (
            f"用工作区中某个文件的文本（UTF-8，最大 {MAX_CONTENT_SIZE}）新建计划或替换其正文。"
            "适合在编辑导出的计划之后使用：正文无需经过对话。" + _REVISION_HINT_ZH
        ),
        "export_plan_to_file": (
            "把计划正文写入工作区中的文件，便于在那里编辑；缺少的文件夹会自动创建。已存在的文件"
            "只有在 overwrite 为 true 时才会被覆盖。返回写入位置、版本号和字节数，不含正文。"
        ),
        "set_plan_status": (
            "只修改已有计划的状态标签（正文不变，也不返回）；标签不能为空。" + _REVISION_HINT_ZH
        ),
        "get_plan_status": "获取计划的状态标签和版本号，不含正文。",
    },
}

FIELD_DESCRIPTIONS: dict[Language, dict[str, str]] = {
    "en": {
        "name": (
            f"Plan name: 1 to {MAX_NAME_LENGTH} characters, lowercase letters, digits, '-' and "
            "'_', starting with a letter or digit, e.g. 'release' or 'db-migration'. Other "
            "names are refused, not corrected."
        ),
        "content": (
            "The whole plan body in markdown; it replaces the previous body and may not be empty."
        ),
        "title": "Optional human-readable title; left unchanged when omitted.",
        "author": "Who is writing (usually your agent name); left unchanged when omitted.",
        "status": f"Free-form lifecycle label such as {_EXAMPLES}; left unchanged when omitted.",
        "new_status": f"The new status label (not empty), e.g. {_EXAMPLES}.",
        "last_known_revision": (
            "The plan revision you last read. The call is refused if the plan is now at "
            "another revision; 0 means the plan must not exist yet. Omit it to skip the check."
        ),
        "import_path": "Path of the file to read, relative to the workspace folder.",
        "export_path": "Path of the file to write, relative to the workspace folder.",
        "overwrite": "Replace the file if it already exists (default false: refuse).",
    },
    "zh": {
        "name": (
            f"计划名称：1 到 {MAX_NAME_LENGTH} 个字符，只能包含小写字母、数字、'-' 和 '_'，"
            "并以字母或数字开头，例如 'release' 或 'db-migration'。其他名称会被拒绝，不会被自动"
            "修正。"
        ),
        "content": "完整的 markdown 计划正文；它会替换之前的正文，且不能为空。",
        "title": "可选的易读标题；省略时保持不变。",
        "author": "写入者（通常是你的智能体名称）；省略时保持不变。",
        "status": f"自由填写的生命周期标签，例如 {_EXAMPLES}；省略时保持不变。",
        "new_status": f"新的状态标签（不能为空），例如 {_EXAMPLES}。",
        "last_known_revision": (
            "你最后读到的计划版本号。如果计划现在处于其他版本，调用会被拒绝；0 表示该计划必须"
            "尚不存在。省略则不做检查。"
        ),
        "import_path": "要读取的文件路径，相对于工作区文件夹。",
        "export_path": "要写入的文件路径，相对于工作区文件夹。",
        "overwrite": "文件已存在时是否替换（默认 false：拒绝）。",
    },
}
