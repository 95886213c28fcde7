"""The BFCL multi-turn harness (benchmarks/bfcl_multi_turn.py) against the scripted server: the
whole path for every design, BFCL's checker failing wrong calls, the metering of usage, the
entry selection and the command line."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
from pathlib import Path
from typing import Any

import pytest

INSTALL_BFCL = 'pip install -e ".[bench]" && pip install --no-deps "bfcl-eval==2026.3.23"'
if importlib.util.find_spec("bfcl_eval") is None:
    if os.environ.get("REPLAN_REQUIRE_BFCL") == "1":  # set by .ci/run
        raise RuntimeError(f"REPLAN_REQUIRE_BFCL=1 but bfcl-eval is not installed: {INSTALL_BFCL}")
    pytest.skip(f"the BFCL benchmark needs bfcl-eval: {INSTALL_BFCL}", allow_module_level=True)

from langchain_openai import ChatOpenAI  # noqa: E402
from pydantic import SecretStr  # noqa: E402

import benchmarks.bfcl_multi_turn as bench  # noqa: E402
from benchmarks.bfcl_multi_turn import (  # noqa: E402
    DESIGNS,
    ERROR_PREFIX,
    ApiSession,
    BfclMissing,
    Bounds,
    Entry,
    Exchange,
    GroundTruthModel,
    MeteringProxy,
    Row,
    Server,
    Spent,
    load_entries,
    main,
    openai_parameters,
    parse_call,
    parse_entries,
    ranked,
    read_exchange,
    run_entry,
    sample,
    score,
    turns_passed,
)
from replan.testing import (  # noqa: E402
    MODEL_ID,
    PRESETS,
    Quirks,
    Reply,
    ScriptedOpenAIServer,
    raw,
    text,
)

ENTRIES = {entry.index: entry for entry in load_entries()}
TWO_TURNS_DEV, TWO_TURNS_HELD = 3, 100
"""Short entries (two turns each) of the development and the held-back range."""


def entry(index: int) -> Entry:
    return ENTRIES[index]


def scripted_run(
    monkeypatch: pytest.MonkeyPatch,
    chosen: Entry,
    design: str,
    model: GroundTruthModel,
    bounds: Bounds | None = None,
    quirks: Quirks | None = None,
) -> tuple[Row, list[dict[str, Any]]]:
    """`design` on `chosen`, its requests answered by `model` through the metering proxy: the
    row, and the requests the scripted server received."""
    monkeypatch.setenv("OPENAI_API_KEY", "test")
    with (
        ScriptedOpenAIServer(model, quirks=quirks or Quirks()) as scripted,
        MeteringProxy(scripted.base_url) as proxy,
    ):
        server = Server(proxy.base_url, MODEL_ID)
        row = asyncio.run(run_entry(chosen, design, server, bounds or Bounds(), proxy))
        return row, scripted.requests


def test_every_design_passes_the_scripted_entries_and_the_rows_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rows.json"
    argv = ["--entries", f"{TWO_TURNS_DEV},{TWO_TURNS_HELD}", "--json", str(out)]
    assert main(argv) == 0
    rows = json.loads(out.read_text())
    assert [(r["index"], r["design"]) for r in rows] == [
        (index, design) for index in (TWO_TURNS_DEV, TWO_TURNS_HELD) for design in DESIGNS
    ]
    for row in rows:
        truth = entry(row["index"]).ground_truth
        assert row["passed"] and not row["error_type"], row
        assert row["turns_passed"] == row["turns"] == 2
        assert row["calls"] == truth  # every call the tools ran, turn by turn
        assert row["model_calls_per_turn"] == row["model_calls"] / 2
        assert row["split"] == ("dev" if row["index"] < 100 else "held-back")
        assert row["model_calls"] > sum(map(len, truth))  # one call a reply, then "Done."
        assert row["input_tokens"] >= row["processed_tokens"] > 0
        if not row["design"].startswith("react"):  # a system prompt, which the server caches
            assert row["input_tokens"] > row["processed_tokens"]
        assert row["processed_from"] == "cached" and row["seed"] is None
        assert len(row["answers"]) == row["turns"] == 2
    captured = capsys.readouterr()
    table = captured.out.splitlines()
    for design in DESIGNS:
        assert any(line.split()[:4] == ["total", "dev", design, "1/1"] for line in table)
        assert any(line.split()[:4] == ["total", "held-back", design, "1/1"] for line in table)
        assert any(line.split()[:4] == ["total", "all", design, "2/2"] for line in table)
    block = next(i for i, line in enumerate(table) if line.startswith("all (2 entries)"))
    assert table[block].split()[3:] == list(DESIGNS)
    metrics = table[block + 1 : block + 1 + len(bench.SIDE_BY_SIDE)]
    side = {line[:20].strip(): line[20:].split() for line in metrics}
    assert side["passed"] == ["2/2"] * len(DESIGNS)
    assert side["turns passed"] == ["4/4"] * len(DESIGNS)
    calls = [sum(r["model_calls"] for r in rows if r["design"] == d) for d in DESIGNS]
    assert side["model calls"] == [str(count) for count in calls]
    assert side["model calls / turn"] == [f"{count / 4:.1f}" for count in calls]
    api_calls = sum(
        len(call) for i in (TWO_TURNS_DEV, TWO_TURNS_HELD) for call in ENTRIES[i].ground_truth
    )
    assert side["API calls / turn"] == [f"{api_calls / 4:.1f}"] * len(DESIGNS)
    progress = captured.err.splitlines()
    assert progress[0].startswith(f"entries: {TWO_TURNS_DEV} (2 turns, ")
    assert sum(" turn 2/2 ended in " in line for line in progress) == len(rows)
    assert sum(": PASSED, 2/2 turns passed, " in line for line in progress) == len(rows)


@pytest.mark.parametrize("design", DESIGNS)
def test_a_design_that_leaves_out_a_call_fails_on_bfcls_checker(
    design: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = entry(TWO_TURNS_DEV)
    wrong = GroundTruthModel([chosen], drop_last=True)
    row, _ = scripted_run(monkeypatch, chosen, design, wrong)
    assert not row.passed
    assert row.error_type.startswith("multi_turn:"), row.error
    assert row.calls[0] == chosen.ground_truth[0][:-1]


def test_replan_tool_steps_fulfil_a_first_turn_without_an_executor_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chosen = entry(50)  # one turn, two calls
    model = GroundTruthModel([chosen], tool_steps=True)
    row, _ = scripted_run(monkeypatch, chosen, "replan", model)
    assert row.passed, row.error
    assert row.model_calls == 2  # planner, replanner (its answer is the decision's)


def test_a_turn_repeats_a_stateful_call_an_earlier_turn_made(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chosen = entry(0)
    model = GroundTruthModel([chosen], tool_steps=True)
    row, _ = scripted_run(monkeypatch, chosen, "replan", model)
    assert row.calls[3] == chosen.ground_truth[3]
    assert row.passed, row.error


def test_the_checker_passes_the_ground_truth_and_fails_changed_calls() -> None:
    chosen = entry(TWO_TURNS_DEV)
    truth = chosen.ground_truth
    assert score(chosen, truth).passed
    first = truth[0][-1]
    changed = [[*truth[0][:-1], first.replace("'", "'x", 1)], truth[1]]
    verdict = score(chosen, changed)
    assert not verdict.passed and verdict.error_type.startswith("multi_turn:")
    assert not score(chosen, [[], truth[1]]).passed  # a turn without calls
    assert score(chosen, truth[:1]).error_type == "harness:turns"
    utils = __import__("bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils", fromlist=["x"])
    assert not [key for key in vars(utils) if key.startswith("replan_bench_")]  # cleaned up
    assert score(chosen, truth).passed  # scored again: no state kept from before


def test_turns_passed_is_the_longest_prefix_of_turns_the_checker_accepts() -> None:
    chosen = entry(TWO_TURNS_DEV)
    first, second = chosen.ground_truth
    wrong_first = [*first[:-1], first[-1].replace("'", "'x", 1)]
    assert turns_passed(chosen, [first, second]) == 2
    assert turns_passed(chosen, [first, second[:-1]]) == 1  # the second turn fails
    assert turns_passed(chosen, [first, []]) == 1
    assert turns_passed(chosen, [first]) == 1  # a stopped second turn is not given
    assert turns_passed(chosen, [wrong_first, second]) == 0
    assert turns_passed(chosen, []) == 0


class FirstTurnOnly(GroundTruthModel):
    """The ground truth's calls in the first turn only: in later turns every agent loop answers
    at once, without a call (plans and answers as the ground-truth model gives them)."""

    def next_call(self, request: dict[str, Any], entry: Entry, number: int) -> Reply:
        return super().next_call(request, entry, number) if number == 0 else text("Done.")


@pytest.mark.parametrize("design", DESIGNS)
def test_an_entry_whose_second_turn_fails_scores_its_first_turn(
    design: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = entry(TWO_TURNS_DEV)
    row, _ = scripted_run(monkeypatch, chosen, design, FirstTurnOnly([chosen]))
    assert row.calls == [chosen.ground_truth[0], []]
    assert not row.passed and row.error_type == "multi_turn:empty_turn_model_response"
    assert row.turns_passed == 1
    lines = bench.table([row]).splitlines()
    assert lines[1].split()[:4] == ["base", str(TWO_TURNS_DEV), design, "NO"]
    assert lines[1].split()[4] == "1/2" and lines[3].split()[3:5] == ["0/1", "1/2"]


def test_a_stopped_turn_does_not_count_though_its_calls_were_right(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The second turn makes all four calls, then runs out of model calls before it answers."""
    chosen = entry(TWO_TURNS_DEV)
    assert [len(turn) for turn in chosen.ground_truth] == [1, 4]
    bounds = Bounds(executor_max_steps=4)
    row, _ = scripted_run(monkeypatch, chosen, "react", GroundTruthModel([chosen]), bounds)
    assert row.calls == chosen.ground_truth and row.error_type == "harness:turn_stopped"
    assert row.turns_passed == 1


def test_react_with_recovery_runs_the_calls_a_server_returns_as_text_and_react_does_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """llama-server with a small model: every call comes back as a ```json fence in the text.
    The two designs send the same first request: the same tools, documented the same way."""
    chosen = entry(TWO_TURNS_DEV)
    llama_server = PRESETS["llama-server"]
    rows, first_requests = {}, {}
    for design in ("react", "react+recovery"):
        model = GroundTruthModel([chosen])
        rows[design], requests = scripted_run(
            monkeypatch, chosen, design, model, quirks=llama_server
        )
        first_requests[design] = requests[0]
    plain, recovering = rows["react"], rows["react+recovery"]
    assert plain.calls == [[], []] and plain.turns_passed == 0
    assert plain.error_type == "multi_turn:empty_turn_model_response"
    assert recovering.passed and recovering.turns_passed == 2
    assert recovering.calls == chosen.ground_truth
    assert first_requests["react"] == first_requests["react+recovery"]
    assert len(first_requests["react"]["tools"]) == len(chosen.docs)


def test_the_tools_run_the_entrys_apis_and_record_calls_as_bfcl_writes_them() -> None:
    chosen = entry(TWO_TURNS_DEV)
    session = ApiSession(chosen)
    tools = {tool.name: tool for tool in session.tools()}
    assert list(tools) == [doc["name"] for doc in chosen.docs]
    for call in chosen.ground_truth[0]:
        name, args = parse_call(call, [])
        assert not tools[name].invoke(args).startswith(ERROR_PREFIX)
    assert "No such file" in tools["cd"].invoke({"folder": "nowhere"})  # the API's refusal
    assert tools["cd"].invoke({"path": "nowhere"}).startswith(ERROR_PREFIX)  # it raised
    session.turn = 1
    tools["pwd"].invoke({})
    assert session.calls[0][: len(chosen.ground_truth[0])] == chosen.ground_truth[0]
    assert session.calls == [
        [*chosen.ground_truth[0], "cd(folder='nowhere')", "cd(path='nowhere')"],
        ["pwd()"],
    ]


def test_ground_truth_calls_are_read_with_positional_arguments_named() -> None:
    assert parse_call("sort('final_report.pdf')", ["file_name"]) == (
        "sort",
        {"file_name": "final_report.pdf"},
    )
    assert parse_call("mv(source='a', destination='b')", []) == (
        "mv",
        {"source": "a", "destination": "b"},
    )
    with pytest.raises(ValueError, match="not a call"):
        parse_call("x.y", [])


def test_function_documents_become_openai_schemas_as_bfcl_converts_them() -> None:
    parameters = {
        "type": "dict",
        "properties": {
            "rate": {"type": "float", "description": "A rate."},
            "tags": {"type": "array", "items": {"type": "float"}},
            "meta": {"type": "dict", "properties": {"n": {"type": "integer"}}},
            "odd": {"type": "any", "description": "Anything."},
        },
        "required": ["rate"],
    }
    schema = openai_parameters(parameters)
    assert schema["type"] == "object" and schema["required"] == ["rate"]
    props = schema["properties"]
    assert props["rate"] == {
        "type": "number",
        "format": "float",
        "description": "A rate. This is a float type value.",
    }
    assert props["tags"] == {"type": "array", "items": {"type": "number"}}
    assert props["meta"]["type"] == "object"
    assert props["meta"]["properties"]["n"]["type"] == "integer"
    assert props["odd"]["type"] == "string"
    assert parameters["type"] == "dict"  # the document itself is left as it was


def _completion(usage: dict[str, Any] | None, timings: dict[str, Any] | None) -> str:
    body: dict[str, Any] = {
        "id": "c",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL_ID,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}
        ],
    }
    if usage is not None:
        body["usage"] = usage
    if timings is not None:
        body["timings"] = timings
    return json.dumps(body)


def test_replies_are_metered_from_timings_then_cached_tokens_then_as_sent() -> None:
    usage = {"prompt_tokens": 100, "completion_tokens": 7, "total_tokens": 107}
    cached = {**usage, "prompt_tokens_details": {"cached_tokens": 60}}
    timings = {"prompt_n": 12, "cache_n": 88, "predicted_n": 7}
    assert read_exchange(200, _completion(cached, timings).encode()).processed() == (12, "timings")
    assert read_exchange(200, _completion(cached, None).encode()).processed() == (40, "cached")
    assert read_exchange(200, _completion(usage, None).encode()).processed() == (100, "sent")
    assert read_exchange(200, _completion(None, None).encode()).processed() == (None, "unknown")
    stream = "\n\n".join(
        [
            'data: {"choices": [{"delta": {"content": "hi"}}]}',
            f"data: {json.dumps({'choices': [], 'usage': cached, 'timings': timings})}",
            "data: [DONE]",
        ]
    )
    assert read_exchange(200, stream.encode()) == Exchange(200, 100, 7, 60, 12)
    spent = Spent.of(
        [
            Exchange(200, 100, 7, 60, 12),
            Exchange(200, 50, 3, None, None),
            Exchange(500),  # refused: counted as a call, no usage to add
        ]
    )
    assert (spent.model_calls, spent.input_tokens, spent.output_tokens) == (3, 150, 10)
    assert (spent.cached_tokens, spent.processed_tokens) == (None, 62)
    assert spent.processed_from == "sent+timings"
    assert Spent.of([Exchange(200)]).input_tokens is None


def test_the_proxy_passes_replies_through_and_records_llama_servers_timings() -> None:
    usage = {"prompt_tokens": 30, "completion_tokens": 2, "total_tokens": 32}
    with ScriptedOpenAIServer() as scripted, MeteringProxy(scripted.base_url) as proxy:
        scripted.push(raw(_completion(usage, {"prompt_n": 5})), text("plain"))
        key = SecretStr("test")
        model = ChatOpenAI(model=MODEL_ID, base_url=proxy.base_url, api_key=key, max_retries=0)
        assert model.invoke("hello").text == "hi"
        assert model.invoke("again").text == "plain"
        mark = proxy.mark()
        with pytest.raises(Exception, match="script ran out"):
            model.invoke("nothing queued")
    first, second, third = proxy.exchanges
    assert first == Exchange(200, 30, 2, None, 5)
    assert second.status == 200 and second.cached_tokens == 0 and second.prompt_n is None
    assert third.status == 500 and proxy.since(mark) == [third]
    assert scripted.requests[0]["messages"][-1]["content"] == "hello"  # passed on as sent


def test_a_server_that_reports_no_usage_leaves_tokens_unknown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chosen = entry(50)
    quiet = Quirks(usage=False)
    row, _ = scripted_run(monkeypatch, chosen, "react", GroundTruthModel([chosen]), quirks=quiet)
    assert row.passed and row.model_calls == 3
    assert (row.input_tokens, row.processed_tokens, row.processed_from) == (None, None, "unknown")


def test_a_turn_that_times_out_fails_its_entry_and_the_run_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["--entries", f"{TWO_TURNS_DEV}", "--design", "react", "--design", "replan"]
    assert main([*argv, "--timeout", "0.001"]) == 1
    captured = capsys.readouterr()
    assert "multi_turn_base_3 / react: turn 1/2 STOPPED" in captured.err
    assert "multi_turn_base_3 / replan: turn 1/2 STOPPED" in captured.err
    assert "turn 2/2" not in captured.err  # the entry ended there
    assert "harness:turn_stopped: turn 0: stopped after the turn timeout of 0.001 s" in captured.out


def test_the_shortest_entries_come_first_and_samples_are_reproducible() -> None:
    entries = list(ENTRIES.values())
    dev = ranked(entries, range(0, 100))
    assert len(dev) == 100 and all(e.split == "dev" for e in dev)
    keys = [(len(e.turns), e.doc_chars) for e in dev]
    assert keys == sorted(keys) and dev[0].index == 50
    held = ranked(entries, range(100, 200))
    assert all(e.split == "held-back" for e in held) and len(held) == 100
    assert sample(range(100, 200), 4, 7) == sample(range(100, 200), 4, 7)
    assert all(n in range(100, 200) for n in sample(range(100, 200), 4, 7))
    assert sample(range(100, 200), 4, 7) != sample(range(100, 200), 4, 8)
    assert parse_entries("3,7,10-12,multi_turn_base_5,3") == [3, 7, 10, 11, 12, 5]


def test_list_ranks_the_pool_and_sample_prints_its_seed(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["--list", "--pool", "held-back"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:4] == ["entry", "split", "turns", "doc"]
    assert len(lines) == 101 and lines[1].split()[:3] == ["198", "held-back", "1"]
    argv = ["--sample", "1", "--seed", "11", "--pool", "held-back", "--design", "react"]
    assert main(argv) == 0
    (drawn,) = sample(range(100, 200), 1, 11)
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"entries: {drawn} (") and first.endswith("; sample seed 11")


@pytest.mark.parametrize(
    "argv",
    [
        ["--entries", "200"],
        ["--entries", "x"],
        ["--entries", "5-2"],
        ["--sample", "0"],
        ["--seed", "3"],
        ["--design", "nope"],
        ["--entries", "1", "--sample", "2"],
        ["--timeout", "soon"],
        ["--json", "/no/such/folder/rows.json"],
    ],
)
def test_bad_usage_is_one_line_and_exit_2(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("bfcl_multi_turn.py: error:")


def test_without_bfcl_eval_the_script_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def missing() -> Any:
        raise BfclMissing(f"the bfcl-eval package is not installed: {bench.INSTALL}")

    monkeypatch.setattr(bench, "bfcl", missing)
    assert main(["--list"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "pip install --no-deps bfcl-eval mpmath" in err
