"""The page checks' pure parts, without a browser: reading the drawn asset graph (boxes
and edge paths as Dagster 1.13 draws them), comparing it with the definitions, the
Markdown lineage table's rows, and durations worded as the UI words them."""

from __future__ import annotations

import pytest

from assets_tests.ui.dagster_pages import (
    freshness_policy_sentences,
    graph_differences,
    humanized_duration,
    markdown_table_rows,
    path_ends,
    read_graph,
)

# Recorded from the UI: two raw tables feeding two aggregates (boxes 320 x 225, the edge
# from the upstream box's right side to 5 px before the downstream box's left side).
RAW = {
    "nodes": [
        {"x": 100, "y": 100, "w": 320, "h": 225, "lines": ["price_raw"]},
        {"x": 480, "y": 100, "w": 320, "h": 225, "lines": ["price_aggr", "Never materialized"]},
        {"x": 100, "y": 530, "w": 320, "h": 225, "lines": ["trade_raw"]},
        {"x": 480, "y": 530, "w": 320, "h": 225, "lines": ["trade_aggr"]},
        {"x": 860, "y": 900, "w": 320, "h": 225, "lines": ["a group box, no asset"]},
    ],
    "edges": [
        "M420,212.5C447.5,212.5,447.5,212.5,475,212.5",
        "M420,642.5C447.5,642.5,447.5,642.5,475,642.5",
    ],
}
ASSETS = {"price_raw", "price_aggr", "trade_raw", "trade_aggr"}


def test_path_ends_are_the_first_and_last_points():
    assert path_ends("M1180,212.5C1207.5,212.5,1207.5,320,1235,320") == ((1180, 212.5), (1235, 320))
    with pytest.raises(ValueError, match="not a path"):
        path_ends("M1,2")


def test_the_drawn_graph_is_read_in_asset_names():
    rendered = read_graph(RAW, ASSETS)
    assert set(rendered.boxes) == ASSETS
    assert rendered.edges == {("price_raw", "price_aggr"), ("trade_raw", "trade_aggr")}
    assert graph_differences(rendered, ASSETS, set(rendered.edges)) == []


def test_a_missing_asset_or_edge_and_an_extra_edge_are_named():
    rendered = read_graph(RAW, ASSETS)
    problems = graph_differences(
        rendered,
        ASSETS | {"sector_vwap"},
        {("price_raw", "price_aggr"), ("price_aggr", "trade_aggr")},
    )
    assert problems == [
        "assets not drawn: sector_vwap",
        "edges not drawn: price_aggr -> trade_aggr",
        "edges drawn but not defined: trade_raw -> trade_aggr",
    ]


def test_an_edge_ending_near_no_asset_is_stray():
    raw = {**RAW, "edges": ["M420,212.5C600,212.5,600,2000,700,2000"]}
    rendered = read_graph(raw, ASSETS)
    assert rendered.edges == frozenset()
    assert "edges joining no two assets" in graph_differences(rendered, ASSETS, set())[-1]


def test_markdown_table_rows_lose_header_separator_and_backticks():
    markdown = (
        "Column lineage from `jobs_sql/x.sql`.\n\n| column | type | from (kind) |\n|---|---|---|\n"
        "| `symbol` | string | `price_raw.symbol` (identity) |\n"
        "| `n` | bigint | none (no input column, e.g. `count(*)`) |\n\nRows chosen by ..."
    )
    assert markdown_table_rows(markdown) == [
        ("symbol", "string", "price_raw.symbol (identity)"),
        ("n", "bigint", "none (no input column, e.g. count(*))"),
    ]


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (30, "a few seconds"),
        (60, "a minute"),
        (150, "3 minutes"),
        (300, "5 minutes"),
        (600, "10 minutes"),
        (3600, "an hour"),
        (7200, "2 hours"),
        (86400, "a day"),
    ],
)
def test_durations_are_worded_as_the_ui_words_them(seconds: int, words: str):
    assert humanized_duration(seconds) == words


def test_policy_sentences_without_a_warning():
    assert freshness_policy_sentences(600, None) == [
        "Fails if more than 10 minutes since last materialization"
    ]
