"""Fuzzed bad input: 10,000+ malformed records of every kind. The validator gives
each the reason its damage calls for; through real ingestion every one lands in
raw_rejects, nothing crashes, and the valid records of the same files are ingested."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from freshness_pipeline.ingestion.fuzz import MUTATIONS, T0_US, fuzz_lines
from freshness_pipeline.ingestion.validate import REJECT_REASONS, validate_lines
from freshness_pipeline.stream.universe import company_universe

SYMBOLS = ("AAPL", "MSFT", "IBM", "ORCL")
LANDED_US = T0_US + 1_000_000


def test_validator_gives_every_damage_its_reason():
    rng = random.Random(7)
    for stream in ("price", "trade"):
        lines = fuzz_lines(rng, stream, SYMBOLS, bad=6000, good=2000, arrival_us=T0_US)
        batch = validate_lines(
            stream, "000000000001", LANDED_US, [line for line, _, _ in lines], set(SYMBOLS)
        )
        by_line = {r.line_no: r for r in batch.rejects}
        for line_no, (_, kind, reasons) in enumerate(lines):
            if kind is None:
                continue  # valid, unless it is the first of a duplicated trade pair
            assert line_no in by_line or kind == "duplicate", (kind, lines[line_no][0][:200])
            if line_no in by_line:
                assert by_line[line_no].reason in reasons, (kind, by_line[line_no])
        assert {r.reason for r in batch.rejects} <= set(REJECT_REASONS)
        expected_bad = sum(kind is not None for _, kind, _ in lines)
        assert len(batch.rejects) == expected_bad
        assert batch.row_count == len(lines) - expected_bad
        damaged = Counter(kind for _, kind, _ in lines if kind)
        assert set(MUTATIONS) <= set(damaged)
        assert all(len(r.raw_line) <= 2048 for r in batch.rejects)


@pytest.mark.spark
def test_ten_thousand_bad_records_through_ingestion(spark, lakehouse, tmp_path):
    from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
    from freshness_pipeline.ingestion.master import load_company_master

    load_company_master(spark, lakehouse, 200)
    symbols = [c.symbol for c in company_universe(200)]
    rng = random.Random(11)
    expected: dict[str, Counter] = {}
    good: dict[str, int] = {}
    for stream in ("price", "trade"):
        folder = Path(lakehouse.landing_dir) / stream
        folder.mkdir(parents=True, exist_ok=True)
        expected[stream], good[stream] = Counter(), 0
        for seq in range(5):  # five landed files per stream, bad and good mixed in each
            lines = fuzz_lines(rng, stream, symbols, bad=1000, good=300, arrival_us=T0_US)
            landed = LANDED_US + seq
            (folder / f"{seq:012d}-{landed}.jsonl").write_bytes(
                b"\n".join(line for line, _, _ in lines) + b"\n"
            )
            expected[stream].update(kind for _, kind, _ in lines if kind)
            good[stream] += sum(kind is None for _, kind, _ in lines)
    ingestor = Ingestor(spark, lakehouse, IngestConfig(max_files_per_commit=10))
    try:
        ingestor.ingest_once()
    finally:
        ingestor.close()
    rejects = spark.read.format("hudi").load(lakehouse.table_uri("raw_rejects"))
    total_bad = sum(sum(c.values()) for c in expected.values())
    assert total_bad >= 10_000
    assert rejects.count() == total_bad
    assert rejects.where("reason IS NULL OR reason = ''").count() == 0
    for stream, table in (("price", "price_raw"), ("trade", "trade_raw")):
        rows = spark.read.format("hudi").load(lakehouse.table_uri(table)).count()
        assert rows == good[stream]  # of each duplicated pair one is ingested, one rejected
    reasons = {r["reason"] for r in rejects.select("reason").distinct().collect()}
    assert reasons == set(REJECT_REASONS)
