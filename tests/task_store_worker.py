"""Child process for the file store tests: hammers one task folder through the real tools.

    python -m tests.task_store_worker FOLDER NAME COUNT [--link]

Creates COUNT tasks owned by NAME through the TaskCreate tool; with --link, each new task is
also made to block the previous one it created, which writes two files per call. Prints one
line per created ID.
"""

from __future__ import annotations

import sys

from replan.tools import task_tools


def main(folder: str, name: str, count: int, link: bool) -> None:
    create, _, update, _ = task_tools(store=folder)
    previous: str | None = None
    for number in range(count):
        reply = create.invoke({"subject": f"{name} {number}", "description": name})
        task_id = reply.split("#", 1)[1].split(" ", 1)[0]
        update.invoke({"taskId": task_id, "owner": name})
        if link and previous is not None:
            update.invoke({"taskId": task_id, "addBlocks": [previous]})
        previous = task_id
        print(task_id, flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), "--link" in sys.argv[4:])
