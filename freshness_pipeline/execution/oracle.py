"""An independent oracle: the six tables recomputed in pandas from the column definitions
(README, "The six tables"), never from the SQL files, so a wrong SQL cannot agree with
itself. It reads the Hudi tables' latest file slices with pyarrow, no Spark.

Precision contract (README): money is exact (DECIMAL(18,2) prices, DECIMAL(38,2)
notional: compared here as integer cents), counts and sizes are exact integers, and each
derived double (vwap, mid, spread, spread_bps, order_imbalance, vwap_vs_mid_bps,
trailing_volume_avg, spike_ratio) is computed in double precision from exact inputs, so
it agrees with this recomputation to a relative 1e-12.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from freshness_pipeline.hudi.commit_keys import HOODIE_COLUMNS
from freshness_pipeline.hudi.location import Location
from freshness_pipeline.hudi.metadata import HudiTableMetadata, TableNotFound

KEYS = {
    "trade_aggr": ("second", "symbol"),
    "price_aggr": ("second", "symbol"),
    "market_features": ("second", "symbol"),
    "enriched_features": ("second", "symbol"),
    "sector_vwap": ("second", "sector"),
    "industry_spike": ("second", "industry"),
}
MONEY = {"open", "high", "low", "close", "best_bid", "best_ask", "notional"}
DOUBLES = {
    "vwap",
    "mid",
    "spread",
    "spread_bps",
    "order_imbalance",
    "vwap_vs_mid_bps",
    "trailing_volume_avg",
    "spike_ratio",
}
REL_TOL = 1e-12
WINDOW_S = 60


def read_table(location: Location | str) -> pd.DataFrame:
    """A Hudi copy-on-write table's current rows: its latest file slices, read with pyarrow."""
    meta = HudiTableMetadata(location)
    slices = meta.latest_file_slices()
    fs, _ = meta.location.filesystem()
    tables = []
    for file_slice in slices:
        path = meta.location.child(file_slice.path).path
        tables.append(pq.read_table(path, filesystem=fs))
    if not tables:
        return pd.DataFrame()
    table = pa.concat_tables(tables, promote_options="default")
    table = table.drop_columns([c for c in HOODIE_COLUMNS if c in table.column_names])
    return table.to_pandas(types_mapper=None, timestamp_as_object=False)


def _cents(values: pd.Series) -> pd.Series:
    """Money as exact integer cents: a raw double rounds half up as a cast to DECIMAL(18,2)
    does; a DECIMAL column (Python Decimals) converts exactly."""
    raw = values.to_numpy(dtype=object)
    cents: list[int | None] = []
    for value in raw:
        if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
            cents.append(None)
        elif isinstance(value, float):
            cents.append(int(np.floor(value * 100 + 0.5)))
        else:  # Decimal
            cents.append(int(value.scaleb(2).to_integral_value()))
    return pd.Series(cents, index=values.index, dtype="Int64")


def _second(ts: pd.Series) -> pd.Series:
    return ts.dt.floor("s")


def trade_aggr(trades: pd.DataFrame) -> pd.DataFrame:
    t = trades.assign(second=_second(trades["event_ts"]), cents=_cents(trades["price"]))
    t = t.sort_values(["symbol", "second", "event_ts", "trade_id"])
    g = t.groupby(["second", "symbol"], sort=False)
    out = pd.DataFrame(
        {
            "open": g["cents"].first(),
            "high": g["cents"].max(),
            "low": g["cents"].min(),
            "close": g["cents"].last(),
            "volume": g["size"].sum(),
            "trade_count": g["size"].count(),
            "notional": (t["cents"] * t["size"]).groupby([t["second"], t["symbol"]]).sum(),
            "arrival_ts": g["arrival_ts"].max(),
        }
    ).reset_index()
    out["vwap"] = out["notional"].astype(float) / 100 / out["volume"].astype(float)
    return out


def price_aggr(prices: pd.DataFrame) -> pd.DataFrame:
    p = prices.assign(second=_second(prices["event_ts"]), cents=_cents(prices["price"]))
    keys = ["second", "symbol"]
    base = p.groupby(keys).agg(update_count=("size", "count"), arrival_ts=("arrival_ts", "max"))
    for side, best, pick in (("B", "best_bid", "max"), ("S", "best_ask", "min")):
        one = p[p["side"] == side]
        top = one.groupby(keys)["cents"].agg(pick).rename(best)
        at_top = one.join(top, on=keys)
        at_top = at_top[at_top["cents"] == at_top[best]]
        size = at_top.groupby(keys)["size"].sum().rename(f"{best}_size")
        base = base.join(top).join(size)
    return base.reset_index()


def market_features(price: pd.DataFrame, trade: pd.DataFrame) -> pd.DataFrame:
    keys = ["second", "symbol"]
    quotes = price.rename(columns={"arrival_ts": "price_arrival_ts"})
    trades = trade.rename(columns={"arrival_ts": "trade_arrival_ts"})
    m = quotes.merge(trades, on=keys, how="outer")
    bid, ask = m["best_bid"].astype(float), m["best_ask"].astype(float)
    mid = (bid + ask) / 200  # cents -> money, one rounding
    m["mid"] = mid
    m["spread"] = (ask - bid) / 100
    m["spread_bps"] = (ask - bid) / 100 / mid * 10000
    bid_size, ask_size = m["best_bid_size"].astype(float), m["best_ask_size"].astype(float)
    m["order_imbalance"] = (bid_size - ask_size) / (bid_size + ask_size)
    m["vwap_vs_mid_bps"] = (m["vwap"] - mid) / mid * 10000
    m["arrival_ts"] = m[["price_arrival_ts", "trade_arrival_ts"]].max(axis=1)
    return m


def enriched_features(market: pd.DataFrame, master: pd.DataFrame) -> pd.DataFrame:
    e = market.merge(master[["symbol", "sector", "industry"]], on="symbol", how="left")
    e["sector"] = e["sector"].fillna("Unknown")
    e["industry"] = e["industry"].fillna("Unknown")
    return e


def sector_vwap(enriched: pd.DataFrame) -> pd.DataFrame:
    e = enriched
    g = e.groupby(["second", "sector"])
    out = pd.DataFrame(
        {
            "volume": g["volume"].sum(min_count=0),
            "trade_count": g["trade_count"].sum(min_count=0),
            "notional": g["notional"].sum(min_count=0),
            "active_symbols": e[e["volume"] > 0].groupby(["second", "sector"])["symbol"].nunique(),
            "quoted_symbols": e[e["best_bid"].notna() | e["best_ask"].notna()]
            .groupby(["second", "sector"])["symbol"]
            .nunique(),
            "arrival_ts": g["arrival_ts"].max(),
        }
    )
    out[["active_symbols", "quoted_symbols"]] = (
        out[["active_symbols", "quoted_symbols"]].fillna(0).astype("int64")
    )
    traded = g["volume"].sum(min_count=1)
    out["vwap"] = np.where(
        traded > 0, out["notional"].astype(float) / 100 / traded.astype(float), np.nan
    )
    return out.reset_index()


def industry_spike(enriched: pd.DataFrame) -> pd.DataFrame:
    g = enriched.groupby(["industry", "second"])
    groups = pd.DataFrame(
        {
            "volume": g["volume"].sum(min_count=0).astype("int64"),
            "trade_count": g["trade_count"].sum(min_count=0).astype("int64"),
            "group_arrival_ts": g["arrival_ts"].max(),
        }
    ).reset_index()
    rows = []
    for _, part in groups.groupby("industry", sort=False):
        part = part.sort_values("second")
        seconds = part["second"].to_numpy()
        volumes = part["volume"].to_numpy()
        arrivals = part["group_arrival_ts"].to_numpy()
        for i, second in enumerate(seconds):
            # The 60 seconds before: [second - 60 s, second).
            lo = np.searchsorted(seconds, second - np.timedelta64(WINDOW_S, "s"), side="left")
            window = slice(lo, i)
            trailing = float(volumes[window].sum()) / WINDOW_S
            newest = max([arrivals[i], *arrivals[window]])
            rows.append((trailing, newest))
        part = part.assign(
            trailing_volume_avg=[r[0] for r in rows[-len(part) :]],
            arrival_ts=[r[1] for r in rows[-len(part) :]],
        )
        groups.loc[part.index, ["trailing_volume_avg", "arrival_ts"]] = part[
            ["trailing_volume_avg", "arrival_ts"]
        ]
    trailing = groups["trailing_volume_avg"].astype(float)
    groups["spike_ratio"] = np.where(trailing > 0, groups["volume"] / trailing, np.nan)
    groups["arrival_ts"] = pd.to_datetime(groups["arrival_ts"])
    return groups


def recompute(
    price_raw: pd.DataFrame, trade_raw: pd.DataFrame, master: pd.DataFrame
) -> dict[str, pd.DataFrame]:
    """All six tables from the raw rows and the company master."""
    trade = trade_aggr(trade_raw)
    price = price_aggr(price_raw)
    market = market_features(price, trade)
    enriched = enriched_features(market, master)
    return {
        "trade_aggr": trade,
        "price_aggr": price,
        "market_features": market,
        "enriched_features": enriched,
        "sector_vwap": sector_vwap(enriched),
        "industry_spike": industry_spike(enriched),
    }


def recompute_lakehouse(
    table: Callable[[str], Location], cutoff_us: int | None = None
) -> dict[str, pd.DataFrame]:
    """The six tables from the raw ones; with `cutoff_us`, from the raw rows that
    arrived by then (what a job capped at that watermark has seen)."""
    price, trade = read_table(table("price_raw")), read_table(table("trade_raw"))
    if cutoff_us is not None:
        cutoff = pd.Timestamp(cutoff_us, unit="us")
        price, trade = (f[_naive(f["arrival_ts"]) <= cutoff] for f in (price, trade))
    return recompute(price, trade, read_table(table("company_master")))


def _naive(stamps: pd.Series) -> pd.Series:
    return stamps.dt.tz_convert(None) if stamps.dt.tz is not None else stamps


@dataclass(frozen=True)
class Difference:
    table: str
    missing: int  # keys the recomputation has and the table lacks
    extra: int  # keys the table has and the recomputation lacks
    mismatched: Mapping[str, int]  # column -> rows whose values differ
    examples: tuple[str, ...]

    @property
    def equal(self) -> bool:
        return not (self.missing or self.extra or any(self.mismatched.values()))


def _normalise(df: pd.DataFrame, column: str, table_side: bool) -> pd.Series:
    values = df[column]
    if column in MONEY:
        # The recomputation already holds cents; the table holds DECIMALs.
        return _cents(values) if table_side else values.astype("Int64")
    if column in DOUBLES:
        return pd.to_numeric(values, errors="coerce").astype(float)
    if pd.api.types.is_datetime64_any_dtype(values):
        return pd.to_datetime(values, utc=True).dt.tz_localize(None)
    if pd.api.types.is_numeric_dtype(values):
        return values.astype("Float64")
    return values


def compare(name: str, expected: pd.DataFrame, actual: pd.DataFrame) -> Difference:
    """Row by row on the table's key: exact for money, counts, text and times; doubles to a
    relative REL_TOL (both missing counts as equal)."""
    keys = list(KEYS[name])
    columns = [c for c in expected.columns if c in actual.columns and c not in keys]
    # (the partition column is the layout's: the published one or the declared one)
    columns = [
        c for c in columns if c not in ("open_at", "close_at", "symbol_prefix", "event_hour")
    ]
    exp = expected.set_index(keys)
    act = actual.set_index(keys)
    exp.index = exp.index.set_levels(
        [pd.to_datetime(exp.index.levels[0], utc=True).tz_localize(None), exp.index.levels[1]]
    )
    act.index = act.index.set_levels(
        [pd.to_datetime(act.index.levels[0], utc=True).tz_localize(None), act.index.levels[1]]
    )
    # A key twice in the table is a doubled row: counted as extra, then compared once.
    doubled = int(act.index.duplicated().sum())
    act = act[~act.index.duplicated()]
    both = exp.index.intersection(act.index)
    missing = len(exp.index.difference(act.index))
    extra = len(act.index.difference(exp.index)) + doubled
    mismatched: dict[str, int] = {}
    examples: list[str] = []
    e_rows, a_rows = exp.loc[both], act.loc[both]
    for column in columns:
        left = _normalise(e_rows, column, table_side=False)
        right = _normalise(a_rows, column, table_side=True)
        if column in DOUBLES:
            lv, rv = left.to_numpy(dtype=float), right.to_numpy(dtype=float)
            same = (np.isnan(lv) & np.isnan(rv)) | np.isclose(lv, rv, rtol=REL_TOL, atol=0)
        else:
            same = (left.isna() & right.isna()) | (left == right).fillna(False)
            same = same.to_numpy(dtype=bool)
        bad = int((~same).sum())
        if bad:
            mismatched[column] = bad
            index = np.flatnonzero(~same)[0]
            examples.append(
                f"{column} at {both[index]}: expected {left.iloc[index]!r}, "
                f"got {right.iloc[index]!r}"
            )
    return Difference(name, missing, extra, mismatched, tuple(examples[:5]))


def check_lakehouse(
    table: Callable[[str], Location],
    cutoff_us: int | None = None,
    only: tuple[str, ...] | None = None,
) -> list[Difference]:
    """Every derived table (or those in `only`) against the recomputation (from the raw
    rows that arrived by `cutoff_us`, if given); raises TableNotFound for a
    missing one."""
    expected = recompute_lakehouse(table, cutoff_us)
    results = []
    for name, frame in expected.items():
        if only is not None and name not in only:
            continue
        try:
            actual = read_table(table(name))
        except TableNotFound:
            raise
        results.append(compare(name, frame, actual))
    return results
