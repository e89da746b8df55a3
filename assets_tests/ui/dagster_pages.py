"""What the Dagster UI must show of this project, page by page, and the checks that wait
for it: the asset graph (every asset and edge of the definitions), an asset page (column
schema, the column lineage table, the freshness policy, staleness metadata), the sensor's
tick history (each job's decision in words) and a run page (the decision's tags).

Every expectation is derived from the project itself (the definitions' asset graph and
metadata, the staleness target, the instance's ticks and runs), never typed in here, so
the checks follow the project when it changes. The page structure they rely on (SVG
`foreignObject` nodes and `path` edges with an arrow marker in the graph, HTML tables on
asset pages) is Dagster 1.13's, which requirements.lock pins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import dagster as dg
from dagster import DagsterInstance
from dagster._core.definitions.run_request import InstigatorType

from assets_tests.ui.browser import PAGE_TIMEOUT_S, Page, normalized

# workspace.yaml loads one python_module; Dagster names the code location after it.
CODE_LOCATION = "freshness_pipeline.definitions"
GRAPH_PATH = "/asset-groups"  # the "Lineage" entry: every asset of every group
EDGE_TOLERANCE_PX = 16  # how far an edge's end may sit from the box it points at (arrow)


def asset_path(asset: str) -> str:
    return f"/assets/{quote(asset)}"


def sensor_path(sensor: str) -> str:
    return f"/locations/{quote(CODE_LOCATION)}/sensors/{quote(sensor)}"


def run_path(run_id: str) -> str:
    return f"/runs/{run_id}"


# --- what the definitions declare ------------------------------------------------------


def _seconds(window: Any) -> float:
    """A freshness policy window (Dagster's SerializableTimeDelta) in seconds."""
    return window.days * 86400 + window.seconds + window.microseconds / 1e6


def definitions_graph(defs: dg.Definitions) -> tuple[set[str], set[tuple[str, str]]]:
    """Every asset and (upstream, downstream) edge, as the definitions declare them."""
    graph = defs.resolve_asset_graph()
    keys = graph.get_all_asset_keys()
    assets = {k.to_user_string() for k in keys}
    edges = {
        (parent.to_user_string(), key.to_user_string())
        for key in keys
        for parent in graph.get(key).parent_keys
    }
    return assets, edges


def asset_page_expectation(defs: dg.Definitions, asset: str) -> AssetPageExpectation:
    """What the asset's page must show, read off its definition."""
    specs = {s.key: s for s in defs.resolve_all_asset_specs()}
    spec = specs[dg.AssetKey(asset)]
    schema = spec.metadata["dagster/column_schema"]
    policy = spec.freshness_policy
    assert isinstance(policy, dg.FreshnessPolicy), f"{asset} has no freshness policy"
    warn = _seconds(policy.warn_window) if policy.warn_window else None
    return AssetPageExpectation(
        asset=asset,
        columns=tuple((c.name, c.type, c.description) for c in schema.columns),
        lineage_rows=tuple(markdown_table_rows(spec.description or "")),
        policy=tuple(freshness_policy_sentences(_seconds(policy.fail_window), warn)),
    )


# --- the asset graph --------------------------------------------------------------------

# Every node is an SVG foreignObject (its box: x, y, width, height) holding the asset's
# name on a line of its own; every edge is an SVG path ending in an arrow marker, drawn
# from the upstream box's side to the downstream box's. Both share one coordinate space.
GRAPH_SCRIPT = """
const svg = [...document.querySelectorAll('svg')]
  .filter(s => s.querySelector('foreignObject'));
const nodes = [], edges = [];
for (const s of svg) {
  for (const fo of s.querySelectorAll('foreignObject')) {
    nodes.push({x: +fo.getAttribute('x'), y: +fo.getAttribute('y'),
                w: +fo.getAttribute('width'), h: +fo.getAttribute('height'),
                // innerText is an HTML element's (foreignObject is SVG): its children's
                lines: [...fo.children].map(c => c.innerText || '').join('\\n')
                  .split('\\n').map(l => l.trim()).filter(l => l)});
  }
  for (const p of s.querySelectorAll('path[marker-end]')) edges.push(p.getAttribute('d'));
}
return {nodes: nodes, edges: edges};
"""


@dataclass(frozen=True)
class Box:
    x: float
    y: float
    w: float
    h: float

    def distance(self, px: float, py: float) -> float:
        """From a point to this box (0 inside it)."""
        dx = max(self.x - px, 0.0, px - (self.x + self.w))
        dy = max(self.y - py, 0.0, py - (self.y + self.h))
        return (dx * dx + dy * dy) ** 0.5


@dataclass(frozen=True)
class RenderedGraph:
    boxes: dict[str, Box]  # asset name -> its node's box
    edges: frozenset[tuple[str, str]]  # (upstream, downstream)
    stray_edges: tuple[str, ...]  # paths whose ends are near no named node


def path_ends(d: str) -> tuple[tuple[float, float], tuple[float, float]]:
    """First and last point of an SVG path's `d` (absolute M/L/C commands, as the graph
    draws them)."""
    numbers = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", d)]
    if len(numbers) < 4 or len(numbers) % 2:
        raise ValueError(f"not a path of absolute points: {d!r}")
    return (numbers[0], numbers[1]), (numbers[-2], numbers[-1])


def read_graph(raw: Mapping[str, Any], names: Iterable[str]) -> RenderedGraph:
    """The graph the page drew, in asset names: a node is named by the line of its text
    that is one of `names`; an edge joins the nodes nearest its two ends."""
    wanted = set(names)
    boxes: dict[str, Box] = {}
    for node in raw["nodes"]:
        named = [line for line in node["lines"] if line in wanted]
        if named:
            boxes[named[0]] = Box(node["x"], node["y"], node["w"], node["h"])

    def nearest(point: tuple[float, float]) -> str | None:
        if not boxes:
            return None
        name, box = min(boxes.items(), key=lambda item: item[1].distance(*point))
        return name if box.distance(*point) <= EDGE_TOLERANCE_PX else None

    edges, stray = set(), []
    for d in raw["edges"]:
        start, end = path_ends(d)
        source, target = nearest(start), nearest(end)
        if source is None or target is None or source == target:
            stray.append(d)
        else:
            edges.add((source, target))
    return RenderedGraph(boxes, frozenset(edges), tuple(stray))


def graph_differences(
    rendered: RenderedGraph, assets: set[str], edges: set[tuple[str, str]]
) -> list[str]:
    """What the drawn graph lacks or adds against the definitions ([] when they agree)."""
    problems = []
    if missing := sorted(assets - set(rendered.boxes)):
        problems.append(f"assets not drawn: {', '.join(missing)}")
    if absent := sorted(edges - rendered.edges):
        problems.append("edges not drawn: " + ", ".join(f"{a} -> {b}" for a, b in absent))
    if extra := sorted(rendered.edges - edges):
        problems.append(
            "edges drawn but not defined: " + ", ".join(f"{a} -> {b}" for a, b in extra)
        )
    if rendered.stray_edges:
        problems.append(f"edges joining no two assets: {list(rendered.stray_edges)}")
    return problems


def check_asset_graph(
    page: Page,
    assets: set[str],
    edges: set[tuple[str, str]],
    timeout_s: float = PAGE_TIMEOUT_S,
) -> Path:
    """The global asset graph draws exactly `assets` and `edges`; returns its screenshot."""
    page.open(GRAPH_PATH, "the asset graph")
    last: list[str] = ["nothing drawn yet"]

    def agrees() -> bool:
        rendered = read_graph(page.script(GRAPH_SCRIPT), assets)
        last[:] = graph_differences(rendered, assets, edges)
        return not last

    page.wait_until(agrees, lambda: "; ".join(last), "asset-graph", timeout_s)
    return page.screenshot("asset-graph")


# --- an asset page --------------------------------------------------------------------------

TABLES_SCRIPT = """
return [...document.querySelectorAll('table')].map(t =>
  [...t.querySelectorAll('tr')].map(r => [...r.children].map(c => (c.innerText || '').trim())));
"""


def markdown_table_rows(markdown: str) -> list[tuple[str, ...]]:
    """The body rows of the Markdown tables in `markdown`, as the page renders their cells
    (code spans lose their backticks)."""
    rows = []
    for line in markdown.splitlines():
        line = line.strip()
        if not (line.startswith("|") and line.endswith("|")):
            continue
        cells = tuple(normalized(c.replace("`", "")) for c in line[1:-1].split("|"))
        if all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue  # the separator under the header
        rows.append(cells)
    return rows[1:] if rows else rows  # the first is the header


def rendered_rows(page: Page) -> set[tuple[str, ...]]:
    return {
        tuple(normalized(cell) for cell in row)
        for table in page.script(TABLES_SCRIPT)
        for row in table
    }


def humanized_duration(seconds: float) -> str:
    """A duration as the UI words it (dayjs `duration(...).humanize()`, whose relative-time
    thresholds round: 150 s is "3 minutes")."""

    def js_round(x: float) -> int:
        return int(x + 0.5)

    if js_round(seconds) <= 44:
        return "a few seconds"
    if js_round(seconds) <= 89:
        return "a minute"
    minutes = js_round(seconds / 60)
    if minutes <= 44:
        return f"{minutes} minutes"
    if minutes <= 89:
        return "an hour"
    hours = js_round(seconds / 3600)
    if hours <= 21:
        return f"{hours} hours"
    if hours <= 35:
        return "a day"
    days = js_round(seconds / 86400)
    if days <= 25:
        return f"{days} days"
    raise ValueError(f"{seconds} s: longer than this check words durations")


def freshness_policy_sentences(fail_s: float, warn_s: float | None) -> list[str]:
    sentences = [f"Fails if more than {humanized_duration(fail_s)} since last materialization"]
    if warn_s:
        sentences.append(
            f"Warns if more than {humanized_duration(warn_s)} since last materialization"
        )
    return sentences


@dataclass(frozen=True)
class AssetPageExpectation:
    """What one job asset's page must show, from its definition."""

    asset: str
    columns: tuple[tuple[str, str, str], ...]  # column schema: name, type, description
    lineage_rows: tuple[tuple[str, ...], ...]  # the description's lineage table
    policy: tuple[str, ...]  # the freshness policy's sentences


def check_asset_page(page: Page, expected: AssetPageExpectation) -> Path:
    """The asset's overview shows its column schema, the column lineage table (after
    "Show more" unfolds the description) and its freshness policy; returns a screenshot."""
    name = f"asset-{expected.asset}"
    page.open(asset_path(expected.asset), f"the asset page of {expected.asset}")
    page.wait_for_texts(["Columns", "Freshness policy", *expected.policy], name)
    # A long description (the lineage table) is folded under "Show more" once rendered;
    # unfolded, the screenshot shows the whole table.
    page.click_text_if_shown("Show more")
    wanted = {
        "column schema": {row for row in expected.columns},
        "column lineage": set(expected.lineage_rows),
    }
    last: dict[str, list[tuple[str, ...]]] = {}

    def shown() -> bool:
        rows = rendered_rows(page)
        last.clear()
        for what, expected_rows in wanted.items():
            if absent := sorted(r for r in expected_rows if r not in rows):
                last[what] = absent
        return not last

    page.wait_until(
        shown,
        lambda: "; ".join(f"{what} rows not shown: {rows}" for what, rows in last.items()),
        name,
    )
    return page.screenshot(name)


def check_asset_checks(page: Page, asset: str, check: str, texts: Sequence[str]) -> Path:
    """The asset's Checks tab lists `check` and shows each of `texts` (its status and what
    its latest evaluation said: the tab opens on the first check by name, `exactness`)."""
    name = f"asset-{asset}-check-{check}"
    page.open(f"{asset_path(asset)}?view=checks", f"the checks of {asset}")
    page.wait_for_texts([check, "Latest execution", *texts], name)
    return page.screenshot(name)


# --- live pages: the sensor's ticks, a run, staleness -----------------------------------------


def sensor_ticks(instance: DagsterInstance, name: str) -> list:
    """The sensor's ticks, newest first."""
    ticks = []
    for state in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR):
        if state.name == name:
            ticks += instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=50)
    return sorted(ticks, key=lambda t: t.timestamp, reverse=True)


# The tick history's row (a `tr`) holding one of the given summaries, and its "View logs".
TICK_LOGS_BUTTON_SCRIPT = """
const wanted = arguments[0];
for (const row of document.querySelectorAll('tr')) {
  const text = (row.innerText || '').replace(/\\s+/g, ' ');
  if (!wanted.some(w => text.includes(w))) continue;
  const button = [...row.querySelectorAll('button')]
    .find(b => (b.innerText || '').trim() === 'View logs');
  if (button) return button;
}
return null;
"""


def check_sensor_ticks(
    page: Page, sensor: str, cursors: Sequence[str], job_lines: Sequence[re.Pattern[str]]
) -> Path:
    """The sensor page's tick history has a row with one of `cursors` (the one-line
    summaries of the instance's own ticks, e.g. ones that launched runs), and that tick's
    logs give every job's decision in words (each of `job_lines` matches)."""
    name = f"sensor-{sensor}"
    page.open(sensor_path(sensor), f"the page of sensor {sensor}")
    wanted = [normalized(c) for c in cursors]
    # That tick's own logs (a finished tick's: the newest may still be running).
    logs_button = page.wait_until(
        lambda: page.script(TICK_LOGS_BUTTON_SCRIPT, wanted),
        lambda: f"no tick row with any of the ticks' summaries (cursor) {wanted[:3]}",
        name,
    )
    shot = page.screenshot(name)
    page.script("arguments[0].scrollIntoView({block: 'center'});", logs_button)
    logs_button.click()
    missing: list[str] = []

    def every_job_worded() -> bool:
        text = page.text()
        missing[:] = [p.pattern for p in job_lines if not p.search(text)]
        return not missing

    page.wait_until(
        every_job_worded,
        lambda: f"the tick's logs lack a decision in words matching {missing}",
        f"{name}-logs",
    )
    page.screenshot(f"{name}-logs")
    return shot


def job_decision_line(job: str) -> re.Pattern[str]:
    """A tick's log line for one job (tick_report.describe_tick): `<job>: launch: ...`,
    `<job>: in the run of <root>: ...` (a step of a chained run) or `<job>: waits:
    <reason>`, then its staleness."""
    return re.compile(
        rf"\b{re.escape(job)}: (launch: \d+ of \d+ files|in the run of \w+: |waits: \S)"
    )


def check_run_page(page: Page, run_id: str, tags: Mapping[str, str]) -> Path:
    """A run's page shows each of `tags` as `key: value` (behind "View tags and config")."""
    name = f"run-{run_id[:8]}"
    page.open(run_path(run_id), f"the page of run {run_id}")
    page.click_text("View tags and config", name)
    page.wait_for_texts([f"{key}: {value}" for key, value in tags.items()], name)
    return page.screenshot(name)


def check_staleness_metadata(page: Page, asset: str, plotted: Sequence[str]) -> Path:
    """The asset's page lists its staleness metadata and, under the metadata's Plots, draws
    a chart titled by each key of `plotted` (numbers over materializations)."""
    name = f"asset-{asset}-staleness"
    page.open(asset_path(asset), f"the asset page of {asset}")
    page.wait_for_texts(["Latest materialization", *plotted], name)
    page.click_text("Plots", name)
    page.wait_until(
        lambda: (
            page.script(
                "return [...document.querySelectorAll('canvas')]"
                ".filter(e => e.getBoundingClientRect().width > 100).length"
            )
            >= len(plotted)
        ),
        lambda: f"fewer than {len(plotted)} plots drawn under Plots (for {list(plotted)})",
        name,
    )
    page.script(
        "const t = [...document.querySelectorAll('canvas')][0];"
        "if (t) t.scrollIntoView({block: 'center'});"
    )
    return page.screenshot(name)
