"""The column lineage model: columns, edges with their kinds, the rows-choosing inputs, and
one asset's lineage as it is stored in `jobs_sql/lineage.json`."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from freshness_pipeline.execution.sql import sql_path

EdgeKind = Literal["identity", "transform", "aggregate", "condition"]
# A path's kind is the strongest of its steps': a value that went through an aggregate
# somewhere is aggregated; an input that only chose the value is a condition.
KIND_RANK: dict[str, int] = {"identity": 0, "transform": 1, "aggregate": 2, "condition": 3}


class LineageError(ValueError):
    """A job's SQL cannot be traced: names the job, the section and what failed."""


@dataclass(frozen=True, order=True)
class ColumnRef:
    table: str  # a Dagster asset key (one path component)
    column: str

    def __str__(self) -> str:
        return f"{self.table}.{self.column}"


@dataclass(frozen=True, order=True)
class Edge:
    source: ColumnRef
    target: ColumnRef
    kinds: tuple[str, ...]  # sorted EdgeKinds; several when paths differ

    @property
    def key(self) -> tuple[str, str, str, str]:
        """The edge without its kinds: what precision and recall count."""
        return (self.source.table, self.source.column, self.target.table, self.target.column)


@dataclass(frozen=True, order=True)
class IndirectDep:
    """An input column that chooses which rows the table gets (a join or filter predicate,
    a grouping key), so it affects every output column: OpenLineage's dataset-level
    INDIRECT lineage. Not a column edge (RELATED.md A's rules give these none)."""

    source: ColumnRef
    subtypes: tuple[str, ...]  # sorted: filter, group_by, join


@dataclass(frozen=True)
class OutputColumn:
    name: str
    type: str  # Spark's simple type string, or "unknown"


@dataclass(frozen=True)
class AssetLineage:
    asset: str
    inputs: tuple[str, ...]  # upstream asset keys, incremental inputs then dimensions
    columns: tuple[OutputColumn, ...]
    edges: tuple[Edge, ...]  # sorted by output column order, then source
    sql_sha256: str
    indirect: tuple[IndirectDep, ...] = ()  # sorted by source

    def deps_by_column(self) -> dict[str, list[Edge]]:
        """Every output column (in table order), with its edges ([] for none)."""
        deps: dict[str, list[Edge]] = {c.name: [] for c in self.columns}
        for edge in self.edges:
            deps[edge.target.column].append(edge)
        return deps

    def edge_keys(self) -> set[tuple[str, str, str, str]]:
        return {e.key for e in self.edges}

    def to_dict(self) -> dict[str, Any]:  # JSON
        return {
            "asset": self.asset,
            "inputs": list(self.inputs),
            "sql_sha256": self.sql_sha256,
            "columns": [[c.name, c.type] for c in self.columns],
            "edges": [
                [e.source.table, e.source.column, e.target.column, list(e.kinds)]
                for e in self.edges
            ],
            "indirect": [
                [d.source.table, d.source.column, list(d.subtypes)] for d in self.indirect
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AssetLineage:  # parsed JSON
        asset = str(data["asset"])
        return cls(
            asset=asset,
            inputs=tuple(data["inputs"]),
            columns=tuple(OutputColumn(n, t) for n, t in data["columns"]),
            edges=tuple(
                Edge(ColumnRef(table, column), ColumnRef(asset, target), tuple(kinds))
                for table, column, target, kinds in data["edges"]
            ),
            sql_sha256=str(data["sql_sha256"]),
            indirect=tuple(
                IndirectDep(ColumnRef(table, column), tuple(subtypes))
                for table, column, subtypes in data["indirect"]
            ),
        )


def sql_sha256(job: str) -> str:
    """A bundled job's SQL file's hash."""
    return file_sha256(str(sql_path(job)))


def file_sha256(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()
