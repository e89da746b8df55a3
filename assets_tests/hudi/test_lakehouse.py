"""Table locations: one object spells a table for Spark (s3a), hudi-rs (s3 + options) and
pyarrow; nothing else joins strings into table paths."""

from __future__ import annotations

import re

import pyarrow.fs as pafs
import pytest

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.location import Location, LocationError


def test_local_paths_and_file_uris_are_one_location(tmp_path):
    plain = Lakehouse.parse(str(tmp_path / "tables"))
    uri = Lakehouse.parse(f"file://{tmp_path}/tables/")
    assert plain == uri
    table = plain.table("trade_aggr")
    assert table.spark == table.hudi_rs == str(tmp_path / "tables" / "trade_aggr")
    fs, path = table.filesystem()
    assert isinstance(fs, pafs.LocalFileSystem) and path == table.spark
    assert table.spark_file("A/f.parquet") == f"{tmp_path}/tables/trade_aggr/A/f.parquet"


def test_relative_paths_resolve(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert Lakehouse.parse("lake").uri == str(tmp_path / "lake")


@pytest.mark.parametrize("root", ["s3://bucket/lake", "s3a://bucket/lake/", "S3A://bucket/lake"])
def test_s3_is_s3a_for_spark_and_s3_for_hudi_rs(root):
    options = {"aws_endpoint_url": "http://127.0.0.1:9000", "aws_region": "us-east-1"}
    table = Lakehouse.parse(root, options).table("price_raw")
    assert table.spark == "s3a://bucket/lake/price_raw"
    assert table.hudi_rs == "s3://bucket/lake/price_raw"
    assert table.storage_options == options
    assert table.spark_file("A/x.parquet") == "s3a://bucket/lake/price_raw/A/x.parquet"
    fs, path = table.filesystem()
    assert isinstance(fs, pafs.S3FileSystem) and path == "bucket/lake/price_raw"


@pytest.mark.parametrize("bad", ["hdfs://nn/lake", "s3://", "gs://b/lake"])
def test_unsupported_locations_are_refused(bad):
    with pytest.raises(LocationError):
        Location.parse(bad)


@pytest.mark.parametrize("name", ["", "a/b", "..", "."])
def test_table_names_cannot_escape_the_root(name):
    with pytest.raises(LocationError):
        Lakehouse.parse("/lake").table(name)


def test_no_other_module_joins_table_paths():
    """Table paths are spelled in hudi/location.py only: no `root/table` string joins and
    no scheme rewriting anywhere else in the package."""
    offenders = []
    patterns = (r"rstrip\(['\"]/['\"]\)\}/", r"s3a://", r"removeprefix\(['\"]file://")
    for path in sorted((PROJECT_ROOT / "freshness_pipeline").rglob("*.py")):
        if path.relative_to(PROJECT_ROOT).as_posix() == "freshness_pipeline/hudi/location.py":
            continue
        text = path.read_text()
        offenders += [f"{path.name}: {p}" for p in patterns if re.search(p, text)]
    assert offenders == []
