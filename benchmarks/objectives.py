"""The objective suite: small objectives with deterministic local tools and answers checked by
code, plus a scripted model that solves every one of them (for the scripted server).

Each `Objective` has its text, the names of the suite tools it offers (a `Kit` holds them with
fresh state for each run), a checker of the run's `Outcome` (the final answer, the task list,
and what the tools recorded) and `Scripted` answers: the steps a good model would plan and how
its executor would carry each one out (`benchmarks/scripted_answers.py` plays that model).

The suite has two halves. `DEVELOPMENT` is the half to work with: prompts, heuristics and tests
may be tried on it. `HELD_BACK` is the half to measure with only: it was chosen on 2026-11-26
(the objectives the tests then depended on least) and from that day nothing is to be tuned on
it. No prompt, docstring, heuristic or test names its objectives or their data (only their
definitions below do); a change is judged on it after it has been made on the development half.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool, ToolException

from replan.state.plans import InMemoryPlanStorage
from replan.state.tasks import Task, TaskContext
from replan.tools.calculator import calculate, calculator_tool
from replan.tools.effects import declare_effects
from replan.tools.plan_tools import plan_tools

# --- the suite's tools --------------------------------------------------------------------

ACTING = frozenset({"place_order"})
"""The world's tools that change it; the others look things up."""
CATALOGUE = {"kettle": 24.90, "toaster": 31.50, "blender": 28.20}
"""Prices in EUR."""
MILES = 5
"""The distance the unit chain converts."""
UNIT_FACTORS = {("mi", "km"): 1.609344, ("km", "m"): 1000.0, ("m", "ft"): 1 / 0.3048}
UNIT_NAMES = {
    "mi": "mi", "mile": "mi", "miles": "mi",
    "km": "km", "kilometre": "km", "kilometres": "km", "kilometer": "km", "kilometers": "km",
    "m": "m", "metre": "m", "metres": "m", "meter": "m", "meters": "m",
    "ft": "ft", "foot": "ft", "feet": "ft",
}  # fmt: skip
RATES_TO_EUR = {"USD": 0.92, "GBP": 1.17}
TICKETS = {"USD": 120, "GBP": 100}
"""The price of the same ticket on two sites, in the site's currency."""
BUSY_HOURS = {"ana": (9, 10, 13), "ben": (9, 11, 12)}
"""Monday's busy hours (each a whole hour starting then) of the people in the calendar."""
WORKDAY = range(9, 17)
FORECASTS = {"oslo": "Oslo tomorrow: high 13.4 °C, low 6.1 °C, light rain"}
PARTS = {
    "P-100": "P-100: discontinued, replaced by P-200; none in stock",
    "P-200": "P-200: 40 in stock",
}
WAREHOUSES = {"north": 120, "south": 340, "east": 275}
"""Units of the item in stock per warehouse."""
TEMPERATURES = {"lisbon": 22.0, "helsinki": 8.5}
"""Current temperatures in °C (the difference is 13.5)."""
INVOICES = {"ACME": ("INV-101", "INV-102", "INV-103")}
AMOUNTS = {"INV-101": 120.50, "INV-102": 75.25, "INV-103": 310.00}
"""Invoice amounts in EUR (505.75 together)."""
PRICE_LIST = {"printer paper": 4.35, "toner": 61.90}
"""Unit prices in EUR."""
PAPER_BOXES = 12
BLOCKING = ("notes", "publish")
"""Words in the subjects of the task that blocks and of the task it blocks (`check_tasks`)."""
ORDERED = ("P-200", 2)
"""The one order that solves the parts objective: the replacement part, the quantity asked for."""
ERROR = "Error:"
"""How the suite's tools start a refusal (raised as ToolException: the model sees the text)."""


def number_text(value: float) -> str:
    """`value` as the tools write it: up to 6 significant digits, no trailing zeros."""
    return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.0f}"


@dataclass(frozen=True)
class Order:
    """An order the `place_order` tool accepted."""

    part: str
    quantity: int
    number: str


@dataclass
class Kit:
    """The suite's tools for one run, with fresh state, and what they recorded."""

    folder: Path
    plans: InMemoryPlanStorage = field(default_factory=InMemoryPlanStorage)
    orders: list[Order] = field(default_factory=list)
    weather_calls: int = 0

    def catalogue_price(self, item: str) -> str:
        """The catalogue price of one item, in EUR."""
        price = CATALOGUE.get(item.strip().lower())
        if price is None:
            raise ToolException(f"{ERROR} no item {item!r}; the catalogue has {sorted(CATALOGUE)}")
        return f"{item.strip().lower()} costs {price:.2f} EUR"

    def calculator(self, expression: str) -> str:
        """replan's calculator (`replan.tools.calculator`), a computing tool."""
        return calculate(expression)

    def warehouse_stock(self, warehouse: str) -> str:
        """How many units of the item are in stock in one warehouse (north, south or east)."""
        units = WAREHOUSES.get(warehouse.strip().lower())
        if units is None:
            raise ToolException(f"{ERROR} no warehouse {warehouse!r}; known: {sorted(WAREHOUSES)}")
        return f"Warehouse {warehouse.strip().lower()}: {units} units"

    def temperature(self, city: str) -> str:
        """The current temperature in a city, in °C."""
        degrees = TEMPERATURES.get(city.strip().lower())
        if degrees is None:
            raise ToolException(f"{ERROR} no temperature for {city!r}")
        return f"{city.strip().title()}: {degrees:.1f} °C"

    def invoices(self, customer: str) -> str:
        """The numbers of a customer's open invoices."""
        numbers = INVOICES.get(customer.strip().upper())
        if numbers is None:
            raise ToolException(f"{ERROR} no customer {customer!r}")
        return f"Open invoices of {customer.strip().upper()}: {', '.join(numbers)}"

    def invoice_amount(self, invoice: str) -> str:
        """The amount of one invoice, by its number (such as INV-101), in EUR."""
        amount = AMOUNTS.get(invoice.strip().upper())
        if amount is None:
            raise ToolException(f"{ERROR} no invoice {invoice!r}")
        return f"{invoice.strip().upper()}: {amount:.2f} EUR"

    def unit_price(self, product: str) -> str:
        """The price list's price of one unit of a product, in EUR."""
        price = PRICE_LIST.get(product.strip().lower())
        if price is None:
            raise ToolException(f"{ERROR} no product {product!r}; listed: {sorted(PRICE_LIST)}")
        return f"{product.strip().lower()}: {price:.2f} EUR per box"

    def convert(self, value: float, from_unit: str, to_unit: str) -> str:
        """Convert a length one step along mi -> km -> m -> ft (only those single steps)."""
        units = UNIT_NAMES.get(from_unit.strip().lower()), UNIT_NAMES.get(to_unit.strip().lower())
        factor = UNIT_FACTORS.get((units[0] or "", units[1] or ""))
        if factor is None:
            steps = ", ".join(f"{a} to {b}" for a, b in UNIT_FACTORS)
            raise ToolException(f"{ERROR} this converter only does {steps}")
        return f"{number_text(value)} {units[0]} = {number_text(value * factor)} {units[1]}"

    def exchange_rate(self, currency: str) -> str:
        """How many EUR one unit of `currency` (a code such as USD) buys."""
        rate = RATES_TO_EUR.get(currency.strip().upper())
        if rate is None:
            raise ToolException(f"{ERROR} no rate for {currency!r}; known: {sorted(RATES_TO_EUR)}")
        return f"1 {currency.strip().upper()} = {rate} EUR"

    def calendar(self, person: str) -> str:
        """The hours a person is busy on Monday."""
        busy = BUSY_HOURS.get(person.strip().lower())
        if busy is None:
            raise ToolException(f"{ERROR} no calendar for {person!r}")
        hours = ", ".join(f"{hour:02d}:00" for hour in busy)
        return f"{person.strip().title()} is busy on Monday at {hours} (one hour each)"

    def weather(self, city: str) -> str:
        """Tomorrow's forecast for a city. The service is sometimes busy: try again then."""
        self.weather_calls += 1
        if self.weather_calls == 1:
            raise ToolException(f"{ERROR} the weather service is busy, try again")
        forecast = FORECASTS.get(city.strip().lower())
        if forecast is None:
            raise ToolException(f"{ERROR} no forecast for {city!r}")
        return forecast

    def part_stock(self, part: str) -> str:
        """What the parts store knows about a part number such as P-100."""
        known = PARTS.get(part.strip().upper())
        if known is None:
            raise ToolException(f"{ERROR} unknown part {part!r}")
        return known

    def place_order(self, part: str, quantity: int) -> str:
        """Order `quantity` units of a part; answers with the order number."""
        code = part.strip().upper()
        if "discontinued" in PARTS.get(code, "discontinued"):
            raise ToolException(f"{ERROR} {part} cannot be ordered (unknown or discontinued)")
        if quantity < 1:
            raise ToolException(f"{ERROR} the quantity must be at least 1")
        order = Order(code, quantity, f"ORD-{4711 + len(self.orders)}")
        self.orders.append(order)
        return f"Order {order.number} placed: {quantity} x {code}"

    def tools(self, names: Sequence[str]) -> list[BaseTool]:
        """The tools called `names`: the methods above, and replan's plan-document tools."""
        documents = {t.name: t for t in plan_tools(self.plans, workspace=self.folder)}
        documents["calculator"] = calculator_tool()
        return [documents[name] if name in documents else self._tool(name) for name in names]

    def _tool(self, name: str) -> BaseTool:
        """The method `name` as a tool, declared read-only unless it acts (places an order)."""
        tool = StructuredTool.from_function(getattr(self, name), handle_tool_error=True)
        return tool if name in ACTING else declare_effects(tool, read_only=True)


# --- outcomes and checkers ----------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    """What a run left: its final answer, its task list, and the kit its tools used."""

    response: str
    tasks: TaskContext
    kit: Kit


_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?")


def numbers_in(text: str) -> list[float]:
    """Every number written in `text` (thousands separators allowed)."""
    return [float(match.replace(",", "")) for match in _NUMBER.findall(text)]


def mentions(text: str, value: float, tolerance: float = 0.005) -> bool:
    """Whether `text` writes a number within `tolerance` of `value`."""
    return any(abs(number - value) <= tolerance for number in numbers_in(text))


def check_catalogue(outcome: Outcome) -> bool:
    """The total of the three prices."""
    return mentions(outcome.response, sum(CATALOGUE.values()))


def check_units(outcome: Outcome) -> bool:
    """`MILES` in feet, to the nearest foot."""
    feet = MILES * UNIT_FACTORS["mi", "km"] * UNIT_FACTORS["km", "m"] * UNIT_FACTORS["m", "ft"]
    return mentions(outcome.response, round(feet), 0.5)


def _task(tasks: Sequence[Task], word: str) -> Task | None:
    return next((task for task in tasks if word in task.subject.lower()), None)


def check_tasks(outcome: Outcome) -> bool:
    """A release-notes task and a publish task that is blocked by it."""
    tasks = outcome.tasks.sorted_tasks()
    notes, publish = (_task(tasks, word) for word in BLOCKING)
    return notes is not None and publish is not None and notes.id in publish.blocked_by


def check_plan_document(outcome: Outcome) -> bool:
    """Plan 'garden' lists dig, plant, water in that order and has status 'ready'."""
    plan = outcome.kit.plans.get("garden")
    if plan is None or (plan.status or "").strip().lower() != "ready":
        return False
    body = plan.content.lower()
    places = [body.find(word) for word in ("dig", "plant", "water")]
    return -1 not in places and places == sorted(places)


def check_weather(outcome: Outcome) -> bool:
    """Tomorrow's high in Oslo (the service refuses the first call)."""
    return mentions(outcome.response, 13.4, 0.05)


def check_order(outcome: Outcome) -> bool:
    """Exactly one order, of 2 units of the replacement part, and its number in the answer."""
    orders = outcome.kit.orders
    return (
        len(orders) == 1
        and (orders[0].part, orders[0].quantity) == ORDERED
        and orders[0].number in outcome.response
    )


_CHEAPER = re.compile(r"cheaper:\s*(USD|GBP)", re.IGNORECASE)


def check_tickets(outcome: Outcome) -> bool:
    """Both prices in EUR, and the cheaper one named on a 'Cheaper: CODE' line."""
    named = _CHEAPER.findall(outcome.response)
    prices = {code: amount * RATES_TO_EUR[code] for code, amount in TICKETS.items()}
    cheapest = min(prices, key=prices.__getitem__)
    return (
        bool(named)
        and named[-1].upper() == cheapest
        and all(mentions(outcome.response, price, 0.01) for price in prices.values())
    )


def first_common_free_hour() -> int:
    """The first hour of the workday when nobody in the calendar is busy."""
    return next(h for h in WORKDAY if all(h not in busy for busy in BUSY_HOURS.values()))


def check_meeting(outcome: Outcome) -> bool:
    """The first hour when Ana and Ben are both free, written as HH:00."""
    written = re.findall(r"\b(\d{1,2}):00\b", outcome.response)
    return bool(written) and int(written[-1]) == first_common_free_hour()


def check_warehouse(outcome: Outcome) -> bool:
    """The warehouse with the most units, with its count, and no other warehouse's count."""
    best = max(WAREHOUSES, key=WAREHOUSES.__getitem__)
    others = [units for name, units in WAREHOUSES.items() if name != best]
    text = outcome.response
    return (
        best in text.lower()
        and mentions(text, WAREHOUSES[best])
        and not any(mentions(text, units) for units in others)
    )


def check_temperature_gap(outcome: Outcome) -> bool:
    """How much warmer Lisbon is than Helsinki."""
    return mentions(outcome.response, TEMPERATURES["lisbon"] - TEMPERATURES["helsinki"], 0.05)


def check_invoice_total(outcome: Outcome) -> bool:
    """The total of ACME's open invoices."""
    return mentions(outcome.response, sum(AMOUNTS[n] for n in INVOICES["ACME"]))


def check_paper_order(outcome: Outcome) -> bool:
    """The price of `PAPER_BOXES` boxes of printer paper."""
    return mentions(outcome.response, PAPER_BOXES * PRICE_LIST["printer paper"])


# Writing objectives: answered from what a model knows, with no tool. Their checks read the
# form of the answer, not its facts.

_LIST_ITEM = re.compile(r"^([ \t]*)(?:[-*•+]|\d{1,2}[.)]|\[[ xX]?\])[ \t]+\S", re.MULTILINE)
_RECOMMENDS = re.compile(
    r"\b(?:recommend\w*|suggest\w*|choose|pick|go with|best (?:choice|option|fit)|winner)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def list_items(text: str) -> int:
    """How many items the outermost list of `text` has (bullets, numbers or check boxes)."""
    indents = [len(match[1].expandtabs(4)) for match in _LIST_ITEM.finditer(text)]
    return indents.count(min(indents)) if indents else 0


def named(text: str, names: Sequence[str]) -> list[str]:
    """The `names` that `text` mentions as words, in any case."""
    return [
        name for name in names if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text, re.I)
    ]


def recommends_one_of(text: str, names: Sequence[str]) -> bool:
    """Whether a sentence of `text` recommends (or picks) one of `names` and names no other."""
    return any(
        _RECOMMENDS.search(sentence) and len(named(sentence, names)) == 1
        for sentence in _SENTENCE_END.split(text)
    )


def compares(items: Sequence[str], at_least: int | None = None) -> Callable[[Outcome], bool]:
    """A check that the answer names `at_least` of `items` (default: all) and recommends one of
    those it names, in a sentence that names no other. It reads names and form, not facts."""

    def check(outcome: Outcome) -> bool:
        found = named(outcome.response, items)
        enough = len(found) >= (len(items) if at_least is None else at_least)
        return enough and recommends_one_of(outcome.response, found)

    return check


TASK_QUEUES = (
    "Celery", "RQ", "Redis Queue", "Dramatiq", "Huey", "arq", "TaskIQ", "Django-Q", "Django-Q2",
    "APScheduler", "Procrastinate", "SAQ", "Kombu", "Luigi", "Airflow", "Hatchet", "Temporal",
    "Prefect", "Dask", "Ray", "Faust", "RabbitMQ", "Redis", "Kafka", "SQS", "Beanstalkd",
    "ZeroMQ", "NSQ", "Pika", "Gearman",
)  # fmt: skip
"""Python task queues, job runners and the brokers they are often compared as: an answer to an
objective that names none must name three (an answer naming a web framework as its third
task queue fails)."""


def lists(count: int) -> Callable[[Outcome], bool]:
    """A check that the answer is a list of exactly `count` items."""
    return lambda outcome: list_items(outcome.response) == count


# --- the scripted model's answers ---------------------------------------------------------

Call = tuple[str, dict[str, Any]]
"""A tool call the scripted executor makes: name and arguments."""


@dataclass(frozen=True)
class Step:
    """One planned step: its text, the keys of the steps it needs, the executor's next tool
    call given the prompt and the tool results so far (None: report), and its report."""

    text: str
    needs: tuple[str, ...] = ()
    act: Callable[[str, list[str]], Call | None] = lambda prompt, results: None
    report: Callable[[str, list[str]], str] | None = None


@dataclass(frozen=True)
class Scripted:
    """A plan that solves an objective. `steps` in order (key -> step); `first` the keys of the
    first plan; `still_to_do` the keys left given the results so far (by key). An objective
    that needs no tool has no steps: its planner answers at once with `answer`."""

    steps: dict[str, Step]
    first: tuple[str, ...]
    still_to_do: Callable[[dict[str, str]], list[str]] | None = None
    answer: str = ""

    def remaining(self, results: dict[str, str]) -> list[str]:
        """The keys still to do after `results`."""
        if self.still_to_do is not None:
            return self.still_to_do(results)
        return [key for key in self.first if key not in results]


def answered(text: str) -> Scripted:
    """The script of an objective that needs no tool: no steps, the answer at once."""
    return Scripted({}, (), answer=text)


def once(name: str, args: dict[str, Any]) -> Callable[[str, list[str]], Call | None]:
    """Call tool `name` once, then report."""
    return lambda prompt, results: None if results else (name, args)


def retrying(name: str, args: dict[str, Any], tries: int = 3) -> Callable[..., Call | None]:
    """Call tool `name` until it does not refuse, at most `tries` times."""

    def act(prompt: str, results: list[str]) -> Call | None:
        failed = not results or results[-1].startswith(ERROR)
        return (name, args) if failed and len(results) < tries else None

    return act


def _found(pattern: str, prompt: str) -> list[Any]:
    return re.findall(pattern, prompt)


def _sum_prices(prompt: str, results: list[str]) -> Call | None:
    prices = dict(_found(r"(\w+) costs ([\d.]+) EUR", prompt))
    return None if results else ("calculator", {"expression": " + ".join(prices.values())})


def _convert_found(unit: str, to: str) -> Callable[[str, list[str]], Call | None]:
    def act(prompt: str, results: list[str]) -> Call | None:
        value = float(_found(rf"= ([\d.]+) {unit}\b", prompt)[-1])
        return None if results else ("convert", {"value": value, "from_unit": unit, "to_unit": to})

    return act


def _release_tasks(prompt: str, results: list[str]) -> Call | None:
    if not results:
        return "TaskCreate", {"subject": "Write the release notes", "description": "For 2.0."}
    if len(results) == 1:
        return "TaskCreate", {"subject": "Publish the release", "description": "Ship 2.0."}
    if len(results) == 2:
        notes, publish = (re.findall(r"#(\d+)", result)[0] for result in results)
        return "TaskUpdate", {"taskId": publish, "addBlockedBy": [notes]}
    return None


def _garden_plan(prompt: str, results: list[str]) -> Call | None:
    body = "1. Dig the beds\n2. Plant the seedlings\n3. Water them"
    return None if results else ("write_plan", {"name": "garden", "content": body})


def _ticket_prices(prompt: str, results: list[str]) -> Call | None:
    rates = dict(_found(r"1 (USD|GBP) = ([\d.]+) EUR", prompt))
    if len(results) < len(TICKETS):
        code = list(TICKETS)[len(results)]
        return "calculator", {"expression": f"{TICKETS[code]} * {rates[code]}"}
    return None


def _cheaper_report(prompt: str, results: list[str]) -> str:
    prices = dict(zip(TICKETS, (float(r.rsplit("= ", 1)[1]) for r in results), strict=True))
    lines = [f"{TICKETS[code]} {code} = {number_text(eur)} EUR" for code, eur in prices.items()]
    return "; ".join(lines) + f". Cheaper: {min(prices, key=prices.__getitem__)}"


def _meeting_report(prompt: str, results: list[str]) -> str:
    busy = {
        person.lower(): {int(h) for h in re.findall(r"(\d{2}):00", hours)}
        for person, hours in _found(r"(\w+) is busy on Monday at ([\d:, ]+)", prompt)
    }
    free = next(h for h in WORKDAY if busy and all(h not in hours for hours in busy.values()))
    return f"The first hour both are free on Monday is {free:02d}:00"


def _most_units_report(prompt: str, results: list[str]) -> str:
    stock = {name: int(units) for name, units in _found(r"Warehouse (\w+): (\d+) units", prompt)}
    best = max(stock, key=stock.__getitem__)
    return f"Warehouse {best} has the most units: {stock[best]}"


def _difference(prompt: str, results: list[str]) -> Call | None:
    degrees = dict(_found(r"(Lisbon|Helsinki): ([\d.]+) °C", prompt))
    expression = f"{degrees['Lisbon']} - {degrees['Helsinki']}"
    return None if results else ("calculator", {"expression": expression})


def _invoice_sum(prompt: str, results: list[str]) -> Call | None:
    amounts = dict(_found(r"(INV-\d+): ([\d.]+) EUR", prompt))  # each invoice once
    return None if results else ("calculator", {"expression": " + ".join(amounts.values())})


def _paper_price(prompt: str, results: list[str]) -> Call | None:
    price = _found(r"printer paper: ([\d.]+) EUR", prompt)[-1]
    return None if results else ("calculator", {"expression": f"{PAPER_BOXES} * {price}"})


def _invoice_plan(results: dict[str, str]) -> list[str]:
    if "list" not in results:
        return ["list"]
    return [key for key in (*INVOICES["ACME"], "total") if key not in results]


def _order_plan(results: dict[str, str]) -> list[str]:
    replaced = any("replaced by P-200" in r or r.startswith("FAILED") for r in results.values())
    if not replaced:
        return [key for key in ("stock", "order_old") if key not in results]
    return [] if "order_new" in results else ["order_new"]


# --- the suite ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Objective:
    """One objective of the suite; `task_list` when it is about a task list (every design is
    then offered the task tools, which no run gets unasked)."""

    name: str
    text: str
    tools: tuple[str, ...]
    check: Callable[[Outcome], bool]
    script: Scripted
    task_list: bool = False


SUITE: tuple[Objective, ...] = (
    Objective(
        "catalogue_total",
        "What do a kettle, a toaster and a blender from the catalogue cost together? Look up "
        "each price, add them with the calculator and give the total in EUR.",
        ("catalogue_price", "calculator"),
        check_catalogue,
        Scripted(
            {
                **{
                    item: Step(f"Look up the catalogue price of the {item}", (), once(
                        "catalogue_price", {"item": item}
                    ))
                    for item in CATALOGUE
                },
                "total": Step(
                    "Add up the three catalogue prices with the calculator", tuple(CATALOGUE),
                    _sum_prices,
                ),
            },
            (*CATALOGUE, "total"),
        ),
    ),
    Objective(
        "unit_chain",
        f"Convert {MILES} miles to feet with the converter, one unit at a time (miles to "
        "kilometres, kilometres to metres, metres to feet), and give the result to the nearest "
        "foot.",
        ("convert",),
        check_units,
        Scripted(
            {
                "km": Step(f"Convert {MILES} miles to kilometres", (), once(
                    "convert", {"value": MILES, "from_unit": "mi", "to_unit": "km"}
                )),
                "m": Step("Convert the kilometres to metres", ("km",), _convert_found("km", "m")),
                "ft": Step("Convert the metres to feet", ("m",), _convert_found("m", "ft")),
            },
            ("km", "m", "ft"),
        ),
    ),
    Objective(
        "release_tasks",
        "Set up the task list for releasing version 2.0: a task to write the release notes and "
        "a task to publish the release, which is blocked by the release-notes task.",
        (),
        check_tasks,
        Scripted(
            {"tasks": Step("Create both release tasks and block publishing on the notes", (),
                           _release_tasks)},
            ("tasks",),
        ),
        task_list=True,
    ),
    Objective(
        "plan_document",
        "Write a plan document named 'garden' whose body lists, in order: dig the beds, plant "
        "the seedlings, water them. Then set the plan's status to 'ready'.",
        ("write_plan", "read_plan", "set_plan_status"),
        check_plan_document,
        Scripted(
            {
                "write": Step("Write the plan document 'garden'", (), _garden_plan),
                "status": Step("Set the status of plan 'garden' to ready", ("write",), once(
                    "set_plan_status", {"name": "garden", "status": "ready"}
                )),
            },
            ("write", "status"),
        ),
    ),
    Objective(
        "flaky_weather",
        "What is tomorrow's high temperature in Oslo, in °C? Use the weather tool.",
        ("weather",),
        check_weather,
        Scripted(
            {"forecast": Step("Get tomorrow's forecast for Oslo", (), retrying(
                "weather", {"city": "Oslo"}
            ))},
            ("forecast",),
        ),
    ),
    Objective(
        "replacement_part",
        "Order 2 units of part P-100 from the parts store (check its stock first) and tell me "
        "the order number.",
        ("part_stock", "place_order"),
        check_order,
        Scripted(
            {
                "stock": Step("Check the stock of part P-100", (), once(
                    "part_stock", {"part": "P-100"}
                )),
                "order_old": Step("Order 2 units of part P-100", ("stock",), once(
                    "place_order", {"part": "P-100", "quantity": 2}
                )),
                "order_new": Step("Order 2 units of the replacement part P-200", (), once(
                    "place_order", {"part": "P-200", "quantity": 2}
                )),
            },
            ("stock", "order_old"),
            _order_plan,
        ),
    ),
    Objective(
        "cheaper_ticket",
        "A ticket costs {} on one site and {} on another. Look up both exchange rates to EUR, "
        "give both prices in EUR and end with a line 'Cheaper: USD' or 'Cheaper: GBP'.".format(
            *(f"{amount} {code}" for code, amount in TICKETS.items())
        ),
        ("exchange_rate", "calculator"),
        check_tickets,
        Scripted(
            {
                **{
                    code: Step(f"Look up the exchange rate from {code} to EUR", (), once(
                        "exchange_rate", {"currency": code}
                    ))
                    for code in TICKETS
                },
                "compare": Step("Convert both ticket prices to EUR and compare them",
                                tuple(TICKETS), _ticket_prices, _cheaper_report),
            },
            (*TICKETS, "compare"),
        ),
    ),
    Objective(
        "meeting_hour",
        "Find the first whole hour on Monday between 09:00 and 17:00 when both Ana and Ben are "
        "free, from their calendars. Answer with the time as HH:00.",
        ("calendar",),
        check_meeting,
        Scripted(
            {
                **{
                    person: Step(f"Read {person.title()}'s Monday calendar", (), once(
                        "calendar", {"person": person.title()}
                    ))
                    for person in BUSY_HOURS
                },
                "meet": Step("Find the first hour when both are free", tuple(BUSY_HOURS),
                             report=_meeting_report),
            },
            (*BUSY_HOURS, "meet"),
        ),
    ),
    Objective(
        "warehouse_most",
        "Which warehouse has the most units of the item: north, south or east? Look up each "
        "warehouse's stock with warehouse_stock and answer with that warehouse's name and its "
        "count only.",
        ("warehouse_stock", "calculator"),
        check_warehouse,
        Scripted(
            {
                **{
                    name: Step(f"Find the count of units in warehouse {name}", (), once(
                        "warehouse_stock", {"warehouse": name}
                    ))
                    for name in WAREHOUSES
                },
                "most": Step("Name the warehouse with the most units and its count",
                             tuple(WAREHOUSES), report=_most_units_report),
            },
            (*WAREHOUSES, "most"),
        ),
    ),
    Objective(
        "temperature_gap",
        "How many degrees warmer is it in Lisbon than in Helsinki right now? Look up both "
        "temperatures and give the difference in °C.",
        ("temperature", "calculator"),
        check_temperature_gap,
        Scripted(
            {
                **{
                    city: Step(f"Find the current temperature in {city.title()}", (), once(
                        "temperature", {"city": city.title()}
                    ))
                    for city in TEMPERATURES
                },
                "gap": Step("Subtract the Helsinki temperature from the Lisbon temperature",
                            tuple(TEMPERATURES), _difference),
            },
            (*TEMPERATURES, "gap"),
        ),
    ),
    Objective(
        "invoice_total",
        "What is the total of customer ACME's open invoices, in EUR? List their invoices, look "
        "up the amount of each one and add them up.",
        ("invoices", "invoice_amount", "calculator"),
        check_invoice_total,
        Scripted(
            {
                "list": Step("List the open invoices of customer ACME", (), once(
                    "invoices", {"customer": "ACME"}
                )),
                **{
                    number: Step(f"Find the amount of invoice {number}", (), once(
                        "invoice_amount", {"invoice": number}
                    ))
                    for number in INVOICES["ACME"]
                },
                "total": Step("Add up the three invoice amounts", INVOICES["ACME"], _invoice_sum),
            },
            ("list",),
            _invoice_plan,
        ),
    ),
    Objective(
        "paper_order",
        f"What do {PAPER_BOXES} boxes of printer paper cost at the price list's unit price, in "
        "EUR?",
        ("unit_price", "calculator"),
        check_paper_order,
        Scripted(
            {
                "price": Step("Find the unit price of printer paper", (), once(
                    "unit_price", {"product": "printer paper"}
                )),
                "cost": Step(f"Multiply the unit price by {PAPER_BOXES} boxes", ("price",),
                             _paper_price),
            },
            ("price", "cost"),
        ),
    ),
    Objective(
        "task_queue_choice",
        "Compare three Python task queues and recommend one",
        (),
        compares(TASK_QUEUES, at_least=3),
        answered(
            "- Celery: mature, many brokers, heavy to run.\n- RQ: simple, Redis only.\n"
            "- Dramatiq: reliable defaults, smaller community.\nI recommend Celery."
        ),
    ),
    Objective(
        "web_framework_choice",
        "Compare Flask, Django and FastAPI for a small REST API, and recommend one of them.",
        (),
        compares(("Flask", "Django", "FastAPI")),
        answered(
            "Flask is minimal, Django brings everything (ORM, admin), FastAPI validates requests "
            "from type hints and is fast.\nFor a small REST API, choose FastAPI."
        ),
    ),
    Objective(
        "pypi_checklist",
        "Write a short checklist for releasing a Python library to PyPI, with three items.",
        (),
        lists(3),
        answered(
            "- Bump the version and update the changelog\n- Build and check the sdist and wheel"
            "\n- Upload with twine and tag the release"
        ),
    ),
    Objective(
        "database_choice",
        "Compare PostgreSQL, MySQL and SQLite for the database of a small web shop, and "
        "recommend one.",
        (),
        compares(("PostgreSQL", "MySQL", "SQLite")),
        answered(
            "PostgreSQL: strict, rich features. MySQL: widespread, easy hosting. SQLite: one "
            "file, no server, one writer at a time.\nI recommend PostgreSQL for a web shop."
        ),
    ),
    Objective(
        "onboarding_checklist",
        "Write a checklist of four items for a new developer's first day on a team.",
        (),
        lists(4),
        answered(
            "1. Get accounts and access\n2. Set up the development environment\n3. Read the "
            "team's guides\n4. Meet the team and pick a first small task"
        ),
    ),
    Objective(
        "kickoff_agenda",
        "Write the agenda of a one-hour project kickoff meeting as a list of five items.",
        (),
        lists(5),
        answered(
            "1. Introductions\n2. Goals and scope\n3. Roles\n4. Timeline and milestones\n"
            "5. Questions and next steps"
        ),
    ),
)  # fmt: skip
OBJECTIVES: dict[str, Objective] = {objective.name: objective for objective in SUITE}
HELD_BACK = (
    "replacement_part",
    "cheaper_ticket",
    "meeting_hour",
    "warehouse_most",
    "release_tasks",
    "flaky_weather",
    "database_choice",
    "onboarding_checklist",
    "kickoff_agenda",
)
"""The held-back half, chosen on 2026-11-26 (the writing objectives, which need no tool, added
on 2026-11-28): measured on, never tuned on (module docstring)."""
DEVELOPMENT = tuple(name for name in OBJECTIVES if name not in HELD_BACK)
"""The development half: every other objective, in the suite's order."""
