from __future__ import annotations

import collections

import numpy as np
import pytest

from freshness_pipeline.stream.generator import MarketEventGenerator, StreamConfig
from freshness_pipeline.stream.universe import company_universe, universe_fingerprint


def take(config: StreamConfig, seconds: int):
    generator = MarketEventGenerator(config)
    return [generator.next_batch() for _ in range(seconds)]


def test_same_seed_same_stream():
    a = take(StreamConfig(seed=3, rate=500), 5)
    b = take(StreamConfig(seed=3, rate=500), 5)
    assert [x.prices for x in a] == [x.prices for x in b]
    assert [x.trades for x in a] == [x.trades for x in b]


def test_other_seed_other_stream():
    a = take(StreamConfig(seed=3, rate=500), 2)
    b = take(StreamConfig(seed=4, rate=500), 2)
    assert a[0].prices != b[0].prices


def test_events_are_well_formed_and_ordered():
    config = StreamConfig(seed=1, rate=2000)
    symbols = {c.symbol for c in company_universe(config.universe_size)}
    for batch in take(config, 3):
        start = config.start_us + batch.second * 1_000_000
        for events in (batch.prices, batch.trades):
            stamps = [e["event_ts"] for e in events]
            assert stamps == sorted(stamps)
            assert all(start <= t < start + 1_000_000 for t in stamps)
            for e in events:
                assert e["symbol"] in symbols
                assert e["size"] > 0 and e["price"] > 0
                # prices sit on the 0.01 tick
                assert abs(e["price"] * 100 - round(e["price"] * 100)) < 1e-6
        assert {e["side"] for e in batch.prices} <= {"B", "S"}
        trade_ids = [e["trade_id"] for e in batch.trades]
        assert trade_ids == sorted(set(trade_ids))


def test_rate_and_trade_share():
    batches = take(StreamConfig(seed=2, rate=4000, trade_fraction=0.2), 5)
    prices = sum(len(b.prices) for b in batches)
    trades = sum(len(b.trades) for b in batches)
    assert 4000 * 5 * 0.95 < prices + trades < 4000 * 5 * 1.05
    assert 0.17 < trades / (prices + trades) < 0.23


def test_activity_is_zipf_skewed():
    batches = take(StreamConfig(seed=5, rate=5000), 4)
    counts = collections.Counter(e["symbol"] for b in batches for e in b.prices + b.trades)
    ranked = sorted(counts.values(), reverse=True)
    total = sum(ranked)
    # the 1% most active names carry far more than 1% of the events
    top = ranked[: max(1, len(company_universe()) // 100)]
    assert sum(top) / total > 0.25


def test_prices_random_walk_stays_near_start():
    generator = MarketEventGenerator(StreamConfig(seed=9, rate=3000))
    first = {}
    last = {}
    for _ in range(10):
        for e in generator.next_batch().trades:
            first.setdefault(e["symbol"], e["price"])
            last[e["symbol"]] = e["price"]
    moves = np.array([abs(last[s] / first[s] - 1) for s in first])
    assert np.median(moves) < 0.05


def test_universe_is_deterministic_and_sized():
    a = company_universe(300, seed=7)
    b = company_universe(300, seed=7)
    assert len(a) == 300 and len({c.symbol for c in a}) == 300
    assert universe_fingerprint(a) == universe_fingerprint(b)
    assert all(c.sector and c.industry for c in a)
    full = company_universe()
    assert len(full) == 5257
    assert len({c.sector for c in full}) >= 8


@pytest.mark.parametrize("bad", [{"rate": 0}, {"trade_fraction": 1.5}, {"zipf_exponent": -1}])
def test_bad_config_refused(bad):
    with pytest.raises(ValueError):
        StreamConfig(**bad)


def test_bursts_multiply_the_rate_in_their_seconds_only():
    steady = StreamConfig(seed=5, rate=200)
    bursty = StreamConfig(seed=5, rate=200, burst_every_s=10, burst_s=3, burst_factor=10.0)
    counts = [len(b.prices) + len(b.trades) for b in take(bursty, 20)]
    in_burst = [c for s, c in enumerate(counts) if s % 10 < 3]
    outside = [c for s, c in enumerate(counts) if s % 10 >= 3]
    assert min(in_burst) > 5 * max(outside)
    assert 1_500 < np.mean(in_burst) < 2_500 and 150 < np.mean(outside) < 250
    assert [bursty.rate_at(s) for s in (0, 2, 3, 9, 10)] == [2000, 2000, 200, 200, 2000]
    # a steady stream is exactly what it was before bursts existed
    assert not steady.bursty
    assert take(steady, 3)[2].prices == take(StreamConfig(seed=5, rate=200), 3)[2].prices


@pytest.mark.parametrize(
    "bad",
    [
        {"burst_every_s": -1},
        {"burst_every_s": 5, "burst_s": 6},
        {"burst_every_s": 5, "burst_s": 0},
        {"burst_factor": 0},
    ],
)
def test_bad_burst_settings_are_refused(bad):
    with pytest.raises(ValueError, match="burst"):
        StreamConfig(**bad)


def test_a_news_spike_puts_a_bursts_extra_events_on_a_few_symbols():
    spiky = StreamConfig(
        seed=5, rate=200, burst_every_s=10, burst_s=3, burst_factor=10.0, spike_symbols=3
    )
    batches = take(spiky, 20)

    def symbols(batch) -> collections.Counter:
        return collections.Counter(e["symbol"] for e in (*batch.prices, *batch.trades))

    counts = [sum(symbols(b).values()) for b in batches]
    in_burst = [c for s, c in enumerate(counts) if s % 10 < 3]
    assert 1_500 < np.mean(in_burst) < 2_500  # the rate is the burst's, as without spikes
    for first in (0, 10):
        burst = sum((symbols(batches[s]) for s in range(first, first + 3)), collections.Counter())
        top3 = sum(n for _, n in burst.most_common(3))
        # the extra 9x rate on three names: about 90 % of the burst's events
        assert top3 > 0.8 * sum(burst.values())
    spiked = [
        {
            sym
            for sym, _ in sum(
                (symbols(batches[s]) for s in range(f, f + 3)), collections.Counter()
            ).most_common(3)
        }
        for f in (0, 10)
    ]
    assert spiked[0] != spiked[1]  # drawn anew for each burst
    # outside the bursts the stream is spread by activity as before
    calm = symbols(batches[5])
    assert calm.most_common(1)[0][1] < 0.5 * sum(calm.values())
    # events stay in time order within each kind, and the same seed gives the same stream
    assert all(
        [e["event_ts"] for e in b.prices] == sorted(e["event_ts"] for e in b.prices)
        for b in batches
    )
    assert take(spiky, 12)[11].trades == batches[11].trades
    assert spiky.spiky and not StreamConfig(burst_every_s=10, burst_factor=10.0).spiky


@pytest.mark.parametrize("bad", [{"spike_symbols": -1}, {"spike_symbols": 10_000}])
def test_bad_spike_settings_are_refused(bad):
    with pytest.raises(ValueError, match="spike_symbols"):
        StreamConfig(universe_size=300, **bad)
