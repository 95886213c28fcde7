"""docs/cli.md says what the code does: every option of every command, and the exit codes.

(The `--json` example's keys are checked against a real run in tests/cli/test_json.py, and the
exit-code table against `replan --help` in tests/cli/test_run.py.)
"""

from __future__ import annotations

import argparse
import re

from replan.cli.output import ExitCode
from replan.cli.parser import build_parser
from tests.support.readme import doc, section_text

CLI = doc("cli.md")


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (subparsers,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(subparsers.choices)


def test_every_command_and_option_is_documented() -> None:
    text = CLI.read_text(encoding="utf-8")
    missing = []
    for name, command in _commands().items():
        if not re.search(rf"`replan {name}\b|^replan {name}\b", text, re.M):
            missing.append(f"replan {name}")
        for action in command._actions:
            for option in action.option_strings:
                if option.startswith("--") and option != "--help" and option not in text:
                    missing.append(f"replan {name} {option}")
    assert "--version" in text
    assert missing == []


def test_the_exit_code_table_is_the_code_s() -> None:
    section = section_text("Exit codes and errors", CLI)
    documented = dict(re.findall(r"^\| (\d+) \| (.+?) \|$", section, re.M))
    assert {int(code): meaning for code, meaning in documented.items()} == {
        code.value: code.meaning for code in ExitCode
    }
    assert "`replan.cli.output.ExitCode`" in section  # where the table comes from
