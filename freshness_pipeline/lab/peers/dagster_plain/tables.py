"""The six tables of one event hour, as plain batch Spark SQL written from the column
definitions (docs/USER-GUIDE.md, "The six tables"), and the Hudi write that replaces the
hour. pyspark only: Dagster is in definitions.py."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

HOUR_COLUMN = "event_hour"
HOUR_FORMAT = "yyyyMMddHH"  # Spark's pattern of the partition value
HOUR_PY_FORMAT = "%Y%m%d%H"
WATERMARK_KEY = "freshness.watermark_us"  # what the staleness sampler reads from a commit
WINDOW_S = 60  # industry_spike's trailing window

# A group of trades' totals (trade_aggr's, and the wide lakehouse's per-letter trades).
TRADE_TOTALS = """sum(size) AS volume,
       count(*) AS trade_count,
       CAST(sum(CAST(price AS DECIMAL(18, 2)) * size) AS DECIMAL(38, 2)) AS notional,
       CAST(sum(CAST(price AS DECIMAL(18, 2)) * size) AS DOUBLE) / sum(size) AS vwap,
       max(arrival_ts) AS arrival_ts"""

TRADE_AGGR = f"""
SELECT symbol,
       date_trunc('SECOND', event_ts) AS second,
       min_by(CAST(price AS DECIMAL(18, 2)), struct(event_ts, trade_id)) AS open,
       max(CAST(price AS DECIMAL(18, 2))) AS high,
       min(CAST(price AS DECIMAL(18, 2))) AS low,
       max_by(CAST(price AS DECIMAL(18, 2)), struct(event_ts, trade_id)) AS close,
       {TRADE_TOTALS}
FROM trade_raw
GROUP BY symbol, date_trunc('SECOND', event_ts)
"""

# Size summed per price level first; the best level's size is then the level's sum.
PRICE_AGGR = """
WITH levels AS (
  SELECT symbol, date_trunc('SECOND', event_ts) AS second, side,
         CAST(price AS DECIMAL(18, 2)) AS price,
         sum(size) AS size, count(*) AS updates, max(arrival_ts) AS arrival_ts
  FROM price_raw
  GROUP BY symbol, date_trunc('SECOND', event_ts), side, CAST(price AS DECIMAL(18, 2))
)
SELECT symbol, second,
       max(CASE WHEN side = 'B' THEN price END) AS best_bid,
       max_by(CASE WHEN side = 'B' THEN size END, CASE WHEN side = 'B' THEN price END)
         AS best_bid_size,
       min(CASE WHEN side = 'S' THEN price END) AS best_ask,
       min_by(CASE WHEN side = 'S' THEN size END, CASE WHEN side = 'S' THEN price END)
         AS best_ask_size,
       sum(updates) AS update_count,
       max(arrival_ts) AS arrival_ts
FROM levels
GROUP BY symbol, second
"""

MID = "CAST((p.best_bid + p.best_ask) / 2 AS DOUBLE)"
MARKET_FEATURES = f"""
SELECT coalesce(p.symbol, t.symbol) AS symbol,
       coalesce(p.second, t.second) AS second,
       p.best_bid, p.best_bid_size, p.best_ask, p.best_ask_size, p.update_count,
       t.open, t.high, t.low, t.close, t.volume, t.trade_count, t.notional, t.vwap,
       {MID} AS mid,
       CAST(p.best_ask - p.best_bid AS DOUBLE) AS spread,
       CAST(p.best_ask - p.best_bid AS DOUBLE) / {MID} * 10000 AS spread_bps,
       CAST(p.best_bid_size - p.best_ask_size AS DOUBLE)
         / (p.best_bid_size + p.best_ask_size) AS order_imbalance,
       (t.vwap - {MID}) / {MID} * 10000 AS vwap_vs_mid_bps,
       greatest(p.arrival_ts, t.arrival_ts) AS arrival_ts
FROM price_aggr p
FULL OUTER JOIN trade_aggr t ON t.symbol = p.symbol AND t.second = p.second
"""

ENRICHED_FEATURES = """
SELECT m.symbol, m.second,
       coalesce(c.sector, 'Unknown') AS sector,
       coalesce(c.industry, 'Unknown') AS industry,
       m.best_bid, m.best_bid_size, m.best_ask, m.best_ask_size, m.update_count,
       m.open, m.high, m.low, m.close, m.volume, m.trade_count, m.notional, m.vwap,
       m.mid, m.spread, m.spread_bps, m.order_imbalance, m.vwap_vs_mid_bps,
       m.arrival_ts
FROM market_features m
LEFT JOIN company_master c ON c.symbol = m.symbol
"""

SECTOR_VWAP = """
SELECT sector, second,
       coalesce(sum(volume), 0) AS volume,
       coalesce(sum(trade_count), 0) AS trade_count,
       CAST(coalesce(sum(notional), 0) AS DECIMAL(38, 2)) AS notional,
       CAST(sum(notional) AS DOUBLE) / sum(volume) AS vwap,
       count(DISTINCT CASE WHEN volume > 0 THEN symbol END) AS active_symbols,
       count(DISTINCT CASE WHEN best_bid IS NOT NULL OR best_ask IS NOT NULL THEN symbol END)
         AS quoted_symbols,
       max(arrival_ts) AS arrival_ts
FROM enriched_features
GROUP BY sector, second
"""


def trailing_window_sql(column: str, seconds: int) -> str:
    """Per `column` per event second: volume against its trailing window, the `seconds`
    before it, [second - seconds, second): its input holds that much of the hour before
    too, and only the hour's own seconds are kept (`{hour_start}`, filled per run)."""
    return f"""
WITH groups AS (
  SELECT {column}, second,
         coalesce(sum(volume), 0) AS volume,
         coalesce(sum(trade_count), 0) AS trade_count,
         max(arrival_ts) AS group_arrival_ts
  FROM enriched_features
  GROUP BY {column}, second
),
windowed AS (
  SELECT {column}, second, volume, trade_count,
         coalesce(sum(volume) OVER trailing, 0) AS trailing_volume,
         greatest(group_arrival_ts, max(group_arrival_ts) OVER trailing) AS arrival_ts
  FROM groups
  WINDOW trailing AS (
    PARTITION BY {column} ORDER BY unix_micros(second)
    RANGE BETWEEN {seconds * 1_000_000} PRECEDING AND 1 PRECEDING
  )
)
SELECT {column}, second, volume, trade_count,
       CAST(trailing_volume AS DOUBLE) / {seconds} AS trailing_volume_avg,
       volume / (CAST(trailing_volume AS DOUBLE) / {seconds}) AS spike_ratio,
       arrival_ts
FROM windowed
WHERE second >= TIMESTAMP '{{hour_start}}'
"""


INDUSTRY_SPIKE = trailing_window_sql("industry", WINDOW_S)


@dataclass(frozen=True)
class Table:
    """One table: its SQL over views named after its inputs, its key, and how much of the
    hour before its inputs must hold."""

    name: str
    sql: str
    key: tuple[str, ...]
    inputs: tuple[str, ...]
    lookback_s: int = 0
    time_column: str = "second"  # the event time its hour partition is made from

    @property
    def reads_raw(self) -> bool:
        return any(i.endswith("_raw") for i in self.inputs)


MASTER = "company_master"
RAW = ("price_raw", "trade_raw")
TABLES = {
    t.name: t
    for t in (
        Table("trade_aggr", TRADE_AGGR, ("second", "symbol"), ("trade_raw",)),
        Table("price_aggr", PRICE_AGGR, ("second", "symbol"), ("price_raw",)),
        Table(
            "market_features", MARKET_FEATURES, ("second", "symbol"), ("price_aggr", "trade_aggr")
        ),
        Table(
            "enriched_features",
            ENRICHED_FEATURES,
            ("second", "symbol"),
            ("market_features", MASTER),
        ),
        Table("sector_vwap", SECTOR_VWAP, ("second", "sector"), ("enriched_features",)),
        Table(
            "industry_spike",
            INDUSTRY_SPIKE,
            ("second", "industry"),
            ("enriched_features",),
            lookback_s=WINDOW_S,
        ),
    )
}


# The checkout this file is in: the defaults below are where `make setup` puts things.
CHECKOUT = Path(__file__).resolve().parents[4]


def lakehouse_root() -> Path:
    """The lakehouse folder every variant shares (a local folder only: the peer is
    measured on the embedded defaults)."""
    return Path(os.environ.get("FRESHNESS_LAKEHOUSE", CHECKOUT / ".lakehouse" / "tables"))


def spark_config() -> dict[str, str]:
    """A local Spark with Hudi's bundle, as Hudi's Spark quick start sets it up."""
    jars = Path(os.environ.get("FRESHNESS_JARS_DIR", CHECKOUT / ".cache" / "jars"))
    bundles = sorted(jars.glob("hudi-spark*-bundle*.jar"))
    if not bundles:
        raise FileNotFoundError(f"no Hudi Spark bundle in {jars} (run `make setup`)")
    return {
        "spark.master": "local[*]",
        "spark.app.name": "dagster_plain",
        "spark.jars": str(bundles[-1]),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.session.timeZone": "UTC",
        # Thousands of rows an hour: 200 shuffle partitions (the default) would be 200 tasks
        # each; 4, as the project's own runs use.
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        # Every server a run starts listens on this machine only.
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
    }


def hour_window(start: datetime, lookback_s: int = 0) -> tuple[str, str, list[str]]:
    """The hour's bounds as Spark timestamp literals (from `lookback_s` before its start)
    and the partition values those rows live in."""
    begin = start - timedelta(seconds=lookback_s)
    end = start + timedelta(hours=1)
    hours = sorted({begin.strftime(HOUR_PY_FORMAT), start.strftime(HOUR_PY_FORMAT)})
    fmt = "%Y-%m-%d %H:%M:%S"
    return begin.strftime(fmt), end.strftime(fmt), hours


def read_input(spark, table: str, start: datetime, lookback_s: int = 0):
    """The rows of `table` in the hour (and the lookback before it); the whole company
    master. A raw table is read whole and filtered (it is partitioned for ingestion, not by
    event hour); a derived one by its hour partitions."""
    frame = spark.read.format("hudi").load(str(lakehouse_root() / table))
    frame = frame.drop(*[c for c in frame.columns if c.startswith("_hoodie_")])
    if table == MASTER:
        return frame
    begin, end, hours = hour_window(start, lookback_s)
    if table in RAW:
        return frame.where(f"event_ts >= TIMESTAMP '{begin}' AND event_ts < TIMESTAMP '{end}'")
    quoted = ", ".join(f"'{h}'" for h in hours)
    return frame.where(
        f"{HOUR_COLUMN} IN ({quoted}) AND second >= TIMESTAMP '{begin}' "
        f"AND second < TIMESTAMP '{end}'"
    ).drop(HOUR_COLUMN)


def compute(spark, table: Table, start: datetime):
    """The table's rows of the hour starting at `start` (UTC), with its partition column."""
    for name in table.inputs:
        read_input(spark, name, start, table.lookback_s).createOrReplaceTempView(name)
    sql = table.sql.replace("{hour_start}", start.strftime("%Y-%m-%d %H:%M:%S"))
    return spark.sql(sql).withColumn(HOUR_COLUMN, _hour_expr(table.time_column))


def _hour_expr(column: str):
    from pyspark.sql import functions as F

    return F.date_format(column, HOUR_FORMAT)


def write_hour(frame, table: Table, watermark_us: int) -> None:
    """Replaces the hour's partition of the table (Hudi's insert_overwrite), the watermark
    in the commit's metadata."""
    options = {
        "hoodie.table.name": table.name,
        "hoodie.datasource.write.table.type": "COPY_ON_WRITE",
        "hoodie.datasource.write.operation": "insert_overwrite",
        "hoodie.datasource.write.recordkey.field": ",".join(table.key),
        "hoodie.datasource.write.partitionpath.field": HOUR_COLUMN,
        "hoodie.datasource.write.keygenerator.class": "org.apache.hudi.keygen.ComplexKeyGenerator",
        # The metadata table roughly doubles a commit's time on two cores (the project's
        # own tables turn it off too).
        "hoodie.metadata.enable": "false",
        "hoodie.datasource.write.commitmeta.key.prefix": "freshness.",
        WATERMARK_KEY: str(watermark_us),
    }
    frame.write.format("hudi").options(**options).mode("append").save(
        str(lakehouse_root() / table.name)
    )


def newest_arrival_us(frame) -> int | None:
    """The newest arrival among the rows (each row's arrival_ts is its inputs' newest)."""
    from pyspark.sql import functions as F

    row = frame.agg(F.unix_micros(F.max("arrival_ts")).alias("newest")).first()
    return None if row is None or row["newest"] is None else int(row["newest"])


def latest_instant(table: str) -> str | None:
    """The newest completed commit of a Hudi table, from its timeline folder (no Spark):
    a new one means new data."""
    base = lakehouse_root() / table / ".hoodie"
    folder = base / "timeline" if (base / "timeline").is_dir() else base
    if not folder.is_dir():
        return None
    done = [
        n
        for n in os.listdir(folder)
        if n.endswith((".commit", ".deltacommit", ".replacecommit")) and n[0].isdigit()
    ]
    return max(done) if done else None
