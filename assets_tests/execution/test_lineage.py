"""Column lineage (lineage.py) against hand-labelled edges, its Dagster metadata, its CLI.
No Spark: the lineage is derived from the SQL text."""

from __future__ import annotations

import json
import re

import dagster as dg
import pytest

from assets_tests.execution.lineage_expected import EXPECTED, EXPECTED_INDIRECT, EXPECTED_KINDS
from freshness_pipeline import cli
from freshness_pipeline.catalog.jobs import JOBS, PIPELINE_ORDER
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.execution import lineage
from freshness_pipeline.execution.lineage import (
    SOURCE_SCHEMAS,
    derivation_key,
    derive_pipeline_lineage,
    load_snapshot,
    snapshot_text,
)
from freshness_pipeline.execution.lineage_model import (
    AssetLineage,
    ColumnRef,
    LineageError,
    sql_sha256,
)
from freshness_pipeline.execution.lineage_sql import trace_select, trace_select_indirect


@pytest.fixture(scope="module")
def derived() -> dict[str, AssetLineage]:
    """Traced from the SQL now (not the committed snapshot)."""
    return derive_pipeline_lineage()


def expected_edges(asset: str) -> set[tuple[str, str, str, str]]:
    edges = set()
    for column, _, sources in EXPECTED[asset]["columns"]:  # type: ignore[union-attr]
        for source in sources:
            table, source_column = source.split(".")
            edges.add((table, source_column, asset, column))
    return edges


def test_every_job_has_hand_labelled_lineage():
    assert set(EXPECTED) == set(JOBS)


@pytest.mark.parametrize("asset", PIPELINE_ORDER)
def test_hand_labels_are_for_the_current_sql(asset):
    """Fails when a SQL file changes without its expected lineage being read again."""
    assert sql_sha256(asset) == EXPECTED[asset]["sql_sha256"], (
        f"jobs_sql/{asset}.sql changed since its lineage was labelled: read it again, update "
        f"EXPECTED[{asset!r}] in assets_tests/execution/lineage_expected.py (edges, types), "
        f"then its sql_sha256 to {sql_sha256(asset)}"
    )


@pytest.mark.parametrize("asset", PIPELINE_ORDER)
def test_derived_edges_match_the_hand_labels(asset, derived, capsys):
    got = derived[asset].edge_keys()
    want = expected_edges(asset)
    hits = len(got & want)
    precision = hits / len(got) if got else 1.0
    recall = hits / len(want) if want else 1.0
    with capsys.disabled():
        print(
            f"\nlineage {asset}: {len(want)} labelled edges, {len(got)} derived, "
            f"precision {precision:.0%}, recall {recall:.0%}"
        )
    assert got == want, (
        f"{asset}: extra {sorted(got - want)}; missing {sorted(want - got)} "
        f"(precision {precision:.0%}, recall {recall:.0%})"
    )


@pytest.mark.parametrize("asset", PIPELINE_ORDER)
def test_output_schema_matches_the_hand_labels(asset, derived):
    want = [(name, spark_type) for name, spark_type, _ in EXPECTED[asset]["columns"]]  # type: ignore[union-attr]
    assert [(c.name, c.type) for c in derived[asset].columns] == want


@pytest.mark.parametrize("asset", PIPELINE_ORDER)
def test_rows_are_chosen_by_the_hand_labelled_columns(asset, derived):
    got = {str(d.source): set(d.subtypes) for d in derived[asset].indirect}
    assert got == EXPECTED_INDIRECT[asset]


def test_edge_kinds_match_the_hand_labels(derived):
    kinds = {(str(e.source), str(e.target)): e.kinds for lin in derived.values() for e in lin.edges}
    for edge, want in EXPECTED_KINDS.items():
        assert kinds[edge] == want, edge


def test_lineage_names_real_upstream_columns(derived):
    """Every source is an input asset of the job (no temp view) and a column it has."""
    columns = {t: set(cols) for t, cols in SOURCE_SCHEMAS.items()}
    columns |= {name: {c.name for c in lin.columns} for name, lin in derived.items()}
    for name, lin in derived.items():
        upstream = {*JOBS[name].inputs, *JOBS[name].dimensions}
        for edge in lin.edges:
            assert edge.source.table in upstream, edge
            assert edge.source.column in columns[edge.source.table], edge


def test_source_schemas_are_what_ingestion_writes():
    from freshness_pipeline.ingestion.ingest import raw_schema

    for stream in ("price", "trade"):
        written = {f.name: f.dataType.simpleString() for f in raw_schema(stream).fields}
        assert SOURCE_SCHEMAS[f"{stream}_raw"] == written


def test_committed_snapshot_is_current(derived):
    """Definitions load the lineage from jobs_sql/lineage.json while its key is current;
    regenerate it with `python -m freshness_pipeline.execution.lineage` after changing a
    job's SQL."""
    key = derivation_key()
    snapshot = load_snapshot(key)
    assert snapshot is not None, (
        "jobs_sql/lineage.json is stale: python -m freshness_pipeline.execution.lineage"
    )
    assert snapshot == derived
    assert lineage.SNAPSHOT_PATH.read_text(encoding="utf-8") == snapshot_text(derived, key)


def test_a_stale_snapshot_is_not_used(tmp_path, derived):
    path = tmp_path / "lineage.json"
    path.write_text(snapshot_text(derived, "another key"), encoding="utf-8")
    assert load_snapshot(derivation_key(), path) is None
    path.write_text(snapshot_text(derived, derivation_key()), encoding="utf-8")
    assert load_snapshot(derivation_key(), path) == derived
    path.write_text("{ not json", encoding="utf-8")
    assert load_snapshot(derivation_key(), path) is None


# --- the four operator rules on their own ---------------------------------------------

TABLES = {
    "a": {"k": "string", "x": "bigint", "y": "double", "flag": "string"},
    "b": {"k": "string", "z": "bigint"},
}


def sources(result: dict, column: str) -> set[str]:
    return {str(ref) for ref in result[column]}


def test_project_rule_takes_every_referenced_column():
    got = trace_select("SELECT x + y AS s, CASE WHEN flag = 'B' THEN x END AS c, k FROM a", TABLES)
    assert sources(got, "s") == {"a.x", "a.y"}
    assert sources(got, "c") == {"a.flag", "a.x"}
    assert got["c"][ColumnRef("a", "flag")] == ("condition",)
    assert got["k"][ColumnRef("a", "k")] == ("identity",)


def test_filter_rule_adds_no_edge():
    sql = "SELECT k FROM a WHERE x > 0 AND flag = 'B'"
    assert sources(trace_select(sql, TABLES), "k") == {"a.k"}
    # ... but the filtered columns choose the rows (dataset-level, indirect)
    indirect = trace_select_indirect(sql, TABLES)
    assert indirect == {ColumnRef("a", "x"): ("filter",), ColumnRef("a", "flag"): ("filter",)}


def test_join_rule_takes_the_side_the_column_comes_from():
    sql = "SELECT a.k, b.z, a.x FROM a JOIN b ON a.k = b.k AND b.z > a.x"
    got = trace_select(sql, TABLES)
    assert sources(got, "k") == {"a.k"}
    assert sources(got, "z") == {"b.z"}
    assert sources(got, "x") == {"a.x"}
    assert {str(ref) for ref in trace_select_indirect(sql, TABLES)} == {
        "a.k",
        "b.k",
        "b.z",
        "a.x",
    }


def test_aggregate_rule_through_a_cte_and_a_union():
    sql = """
    WITH g AS (SELECT k, sum(x) AS total, count(*) AS n FROM a GROUP BY k),
         u AS (SELECT k, total FROM g UNION ALL SELECT k, z AS total FROM b)
    SELECT k, total, (SELECT 1) AS one FROM u
    """
    got = trace_select(sql, TABLES)
    assert sources(got, "k") == {"a.k", "b.k"}
    assert sources(got, "total") == {"a.x", "b.z"}
    assert got["total"][ColumnRef("a", "x")] == ("aggregate",)
    assert sources(got, "one") == set()
    counted = trace_select("SELECT k, count(*) AS n FROM a GROUP BY k", TABLES)
    assert sources(counted, "n") == set()
    assert trace_select_indirect(sql, TABLES) == {ColumnRef("a", "k"): ("group_by",)}


def test_a_query_reading_an_unknown_table_is_refused():
    with pytest.raises(LineageError, match="'nowhere'"):
        trace_select("SELECT k FROM nowhere", TABLES)


def test_sql_sqlglot_cannot_parse_is_a_lineage_error_naming_where():
    with pytest.raises(LineageError, match=r"^query: ParseError"):
        trace_select("SELECT k FROM a WHERE (", TABLES)


# --- Dagster and the CLI ------------------------------------------------------------------


def test_an_asset_whose_sql_cannot_be_traced_still_loads(monkeypatch):
    """Lineage describes a job; it must not take the pipeline down with it."""
    from freshness_pipeline.orchestration import assets

    def refuse(name):
        raise LineageError(f"{name}.sql section merge: ParseError: no")

    monkeypatch.setattr(assets, "asset_lineage", refuse)
    from freshness_pipeline.scheduling.staleness_target import StalenessTarget

    built = assets.build_asset(JOBS["trade_aggr"], StalenessTarget())
    spec = built.specs_by_key[dg.AssetKey("trade_aggr")]
    assert "Column lineage unavailable: trade_aggr.sql section merge" in spec.description
    assert "dagster/column_lineage" not in spec.metadata
    assert "dagster/column_schema" not in spec.metadata


def test_job_assets_carry_column_schema_and_lineage(derived):
    from freshness_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    for name, lin in derived.items():
        node = graph.get(dg.AssetKey(name))
        schema = node.metadata["dagster/column_schema"]
        assert isinstance(schema, dg.TableSchema)
        assert [(c.name, c.type) for c in schema.columns] == [(c.name, c.type) for c in lin.columns]
        column_lineage = node.metadata["dagster/column_lineage"]
        assert isinstance(column_lineage, dg.TableColumnLineage)
        got = {
            (dep.asset_key.to_user_string(), dep.column_name, name, column)
            for column, deps in column_lineage.deps_by_column.items()
            for dep in deps
        }
        assert got == expected_edges(name)
        assert set(column_lineage.deps_by_column) == {c.name for c in lin.columns}
        # Every upstream asset named by a column dep is one the asset depends on.
        parents = {k.to_user_string() for k in node.parent_keys}
        assert {dep[0] for dep in got} <= parents
        # The OSS UI does not draw column lineage: the description carries it as a table.
        assert "| column | type | from (kind) |" in node.description
        assert f"jobs_sql/{name}.sql" in node.description


def test_column_metadata_reaches_the_webserver_intact(derived):
    """The code server sends asset nodes to the webserver serialized: the schema and the
    lineage survive the round trip (Dagster 1.13's snapshot API, pinned)."""
    from dagster._core.remote_representation.external_data import asset_node_snaps_from_repo
    from dagster._serdes import deserialize_value, serialize_value

    from freshness_pipeline.definitions import defs

    snaps = {
        s.asset_key.to_user_string(): s
        for s in asset_node_snaps_from_repo(defs.get_repository_def())
    }
    for name, lin in derived.items():
        metadata = deserialize_value(serialize_value(snaps[name])).metadata
        schema = metadata["dagster/column_schema"].schema
        assert [c.name for c in schema.columns] == [c.name for c in lin.columns]
        deps = metadata["dagster/column_lineage"].column_lineage.deps_by_column
        assert sum(len(d) for d in deps.values()) == len(lin.edges)


def test_raw_sources_list_the_columns_the_lineage_names():
    from freshness_pipeline.definitions import defs

    graph = defs.resolve_asset_graph()
    for table, columns in SOURCE_SCHEMAS.items():
        schema = graph.get(dg.AssetKey(table)).metadata["dagster/column_schema"]
        assert {c.name: c.type for c in schema.columns} == columns
    assert "dagster/column_schema" not in graph.get(dg.AssetKey("raw_rejects")).metadata


def test_a_declared_external_input_gets_no_schema_of_ours(tmp_path, monkeypatch):
    """Someone else's table has its own columns; we do not claim them."""
    from freshness_pipeline.orchestration import raw_sources

    declared = tmp_path / "inputs.toml"
    declared.write_text('[inputs.trade_raw]\nuri = "s3://market/hudi/trades"\n')
    settings = load_settings({"FRESHNESS_INPUTS": str(declared)})
    assert raw_sources._column_schema("trade_raw", settings) == {}
    assert "dagster/column_schema" in raw_sources._column_schema("price_raw", settings)


def run_cli(argv: list[str], capsys) -> str:
    assert cli.main(["lineage", *argv]) == 0
    return capsys.readouterr().out


def test_cli_markdown(capsys):
    out = run_cli([], capsys)
    for asset in PIPELINE_ORDER:
        assert f"### {asset}" in out
    assert (
        "| `vwap` | double | `trade_raw.price` (aggregate), `trade_raw.size` (aggregate) |" in out
    )


def test_cli_json_is_openlineage_column_lineage(capsys):
    out = json.loads(run_cli(["--format", "json"], capsys))
    outputs = {o["name"]: o for o in out["outputs"]}
    assert list(outputs) == list(PIPELINE_ORDER)
    for name, dataset in outputs.items():
        facet = dataset["facets"]["columnLineage"]
        assert facet["_schemaURL"].endswith(
            "ColumnLineageDatasetFacet.json#/$defs/ColumnLineageDatasetFacet"
        )
        got = set()
        for column, field in facet["fields"].items():
            for source in field["inputFields"]:
                assert set(source) == {"namespace", "name", "field", "transformations"}
                for t in source["transformations"]:
                    assert (t["type"], t["subtype"]) in {
                        ("DIRECT", "IDENTITY"),
                        ("DIRECT", "TRANSFORMATION"),
                        ("DIRECT", "AGGREGATION"),
                        ("INDIRECT", "CONDITIONAL"),
                    }
                got.add((source["name"], source["field"], name, column))
        assert got == expected_edges(name)
        whole = {(d["name"], d["field"]): d["transformations"] for d in facet["dataset"]}
        assert {f"{t}.{c}" for t, c in whole} == set(EXPECTED_INDIRECT[name])
        assert all(t["type"] == "INDIRECT" for ts in whole.values() for t in ts)
    vwap = outputs["trade_aggr"]["facets"]["columnLineage"]["fields"]["vwap"]["inputFields"]
    assert {"namespace": "freshness", "name": "trade_raw", "field": "size"}.items() <= vwap[
        1
    ].items()


def test_cli_dot_has_one_arrow_per_edge(capsys):
    out = run_cli(["--format", "dot", "--asset", "sector_vwap"], capsys)
    assert out.startswith("digraph column_lineage {")
    arrows = set(re.findall(r'"(\w+)\.(\w+)" -> "(\w+)\.(\w+)"', out))
    assert arrows == expected_edges("sector_vwap")


def test_cli_refuses_an_unknown_format(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["lineage", "--format", "yaml"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'yaml'" in capsys.readouterr().err


ACCOUNT_TXNS = {
    "txn_id": "string",
    "account_id": "string",
    "region": "string",
    "amount": "decimal(18,2)",
    "txn_ts": "timestamp",
    "arrival_ts": "timestamp",
}


def test_a_users_declared_jobs_get_their_lineage_from_their_inputs_schemas():
    from freshness_pipeline.catalog.jobs import BUNDLED_JOBS_DIR, load_jobs
    from freshness_pipeline.orchestration.assets import column_lineage_parts

    jobs = load_jobs(BUNDLED_JOBS_DIR / "accounts")
    traced = lineage.declared_lineage(jobs, {"account_txns": ACCOUNT_TXNS})
    region = traced["region_minute"]
    assert isinstance(region, AssetLineage)
    deps = region.deps_by_column()
    assert {str(e.source) for e in deps["amount"]} == {"account_minute.amount"}
    minute = traced["account_minute"]
    assert isinstance(minute, AssetLineage)
    assert {str(e.source) for e in minute.deps_by_column()["amount"]} == {"account_txns.amount"}
    table, metadata = column_lineage_parts(jobs["region_minute"], region)
    assert "account_minute" in table and "dagster/column_lineage" in metadata
    # an input whose schema is unknown: both jobs say why, and the asset loads without it
    unknown = lineage.declared_lineage(jobs, {})
    assert str(unknown["account_minute"]) == "no schema for account_txns"
    assert str(unknown["region_minute"]) == "no schema for account_minute"
    table, metadata = column_lineage_parts(jobs["region_minute"], unknown["region_minute"])
    assert table.startswith("Column lineage unavailable: no schema") and metadata == {}
