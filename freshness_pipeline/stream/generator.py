"""A seeded, deterministic generator of IEX-DEEP-like market events.

Two event kinds, as in IEX DEEP: price-level updates (a book level on one side changed)
and trade reports. Activity across symbols is Zipf-skewed (a few names trade most),
prices follow a random walk on a 0.01 tick with a spread of a few ticks, sizes are round
lots with a tail. The same `StreamConfig` always yields the same events, batch by batch,
so experiments can replay the identical stream under each scheduling policy.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from freshness_pipeline.scheduling.units import US_PER_S
from freshness_pipeline.stream.universe import DEFAULT_UNIVERSE_SIZE, company_universe

TICK = 0.01
# 2026-01-02 14:30:00 UTC, a market open; event time is synthetic and fixed so runs repeat.
DEFAULT_START_US = 1_767_364_200_000_000


@dataclass(frozen=True)
class StreamConfig:
    seed: int = 42
    rate: float = 2_000.0  # events per second of event time, both kinds together
    trade_fraction: float = 0.2  # IEX DEEP carries several book updates per trade
    zipf_exponent: float = 1.1
    universe_size: int = DEFAULT_UNIVERSE_SIZE
    start_us: int = DEFAULT_START_US
    # Bursts (a news event, an auction): every `burst_every_s` seconds of event time, the
    # first `burst_s` seconds run at `burst_factor` times the rate. 0 = a steady stream.
    burst_every_s: int = 0
    burst_s: int = 10
    burst_factor: float = 1.0
    # News spikes: a burst's extra events (beyond the steady rate) all go to this many
    # symbols, drawn anew for each burst. 0 = the extra events spread like the rest.
    spike_symbols: int = 0

    def __post_init__(self) -> None:
        if self.rate <= 0:
            raise ValueError(f"rate must be positive, got {self.rate}")
        if self.burst_every_s < 0:
            raise ValueError(f"burst_every_s must be >= 0, got {self.burst_every_s}")
        if self.burst_every_s and not 0 < self.burst_s <= self.burst_every_s:
            raise ValueError(
                f"burst_s must be in (0, burst_every_s={self.burst_every_s}], got {self.burst_s}"
            )
        if self.burst_factor <= 0:
            raise ValueError(f"burst_factor must be positive, got {self.burst_factor}")
        if self.spike_symbols < 0:
            raise ValueError(f"spike_symbols must be >= 0, got {self.spike_symbols}")
        if self.spike_symbols > self.universe_size:
            raise ValueError(
                f"spike_symbols ({self.spike_symbols}) exceeds the universe "
                f"({self.universe_size} companies)"
            )
        if not 0.0 <= self.trade_fraction <= 1.0:
            raise ValueError(f"trade_fraction must be in [0, 1], got {self.trade_fraction}")
        if self.zipf_exponent <= 0:
            raise ValueError(f"zipf_exponent must be positive, got {self.zipf_exponent}")

    @property
    def bursty(self) -> bool:
        return self.burst_every_s > 0 and self.burst_factor != 1.0

    def in_burst(self, second: int) -> bool:
        return self.bursty and second % self.burst_every_s < self.burst_s

    def rate_at(self, second: int) -> float:
        """Events per second at this second of event time."""
        return self.rate * self.burst_factor if self.in_burst(second) else self.rate

    @property
    def spiky(self) -> bool:
        """Whether a burst's extra events go to a few symbols (a news spike)."""
        return self.bursty and self.burst_factor > 1.0 and self.spike_symbols > 0


@dataclass(frozen=True)
class EventBatch:
    """One second of event time: price-level updates and trades, each sorted by event_ts."""

    second: int
    prices: list[dict[str, Any]]
    trades: list[dict[str, Any]]


class MarketEventGenerator:
    """Yields one `EventBatch` per second of event time, deterministically from the config."""

    def __init__(self, config: StreamConfig) -> None:
        self.config = config
        self.symbols = [c.symbol for c in company_universe(config.universe_size)]
        self._rng = np.random.default_rng(config.seed)
        n = len(self.symbols)
        # Zipf weights by a random rank, so activity is not tied to alphabetical order.
        ranks = self._rng.permutation(n) + 1
        weights = 1.0 / ranks.astype(float) ** config.zipf_exponent
        self._activity = weights / weights.sum()
        # Log-normal starting prices between a few dollars and a few hundred.
        start = np.exp(self._rng.normal(np.log(60.0), 0.9, size=n))
        self._mid_ticks = np.maximum(np.round(start / TICK).astype(np.int64), 100)
        self._spread_ticks = self._rng.integers(1, 6, size=n)
        self._trade_id = 0
        self._second = 0
        self._spiking: np.ndarray | None = None  # the current burst's spike symbols

    def __iter__(self) -> Iterator[EventBatch]:
        while True:
            yield self.next_batch()

    def next_batch(self) -> EventBatch:
        cfg, rng = self.config, self._rng
        if cfg.spiky and cfg.in_burst(self._second):
            count, sym = self._spike_symbols()
        else:
            count = int(rng.poisson(cfg.rate_at(self._second)))
            sym = None
        base_us = cfg.start_us + self._second * US_PER_S
        offsets = np.sort(rng.integers(0, US_PER_S, size=count))
        if sym is None:
            sym = rng.choice(len(self.symbols), size=count, p=self._activity)
        is_trade = rng.random(count) < cfg.trade_fraction
        steps = rng.choice(np.array([-1, 0, 1]), size=count, p=[0.25, 0.5, 0.25])
        mid = self._walk(sym, steps)
        half_spread = self._spread_ticks[sym]
        bid, ask = mid - half_spread // 2 - 1, mid + (half_spread + 1) // 2
        side_buy = rng.random(count) < 0.5
        depth = rng.geometric(0.6, size=count) - 1  # levels away from the top of book
        lots = rng.geometric(0.35, size=count)
        odd = rng.random(count) < 0.15
        sizes = np.where(odd, rng.integers(1, 100, size=count), lots * 100)
        prices, trades = [], []
        for i in range(count):
            s = int(sym[i])
            event_ts = int(base_us + offsets[i])
            if is_trade[i]:
                self._trade_id += 1
                price_ticks = int(ask[i] if side_buy[i] else bid[i])
                trades.append(
                    {
                        "symbol": self.symbols[s],
                        "price": round(price_ticks * TICK, 2),
                        "size": int(sizes[i]),
                        "trade_id": self._trade_id,
                        "event_ts": event_ts,
                    }
                )
            else:
                level = int(bid[i] - depth[i]) if side_buy[i] else int(ask[i] + depth[i])
                prices.append(
                    {
                        "symbol": self.symbols[s],
                        "side": "B" if side_buy[i] else "S",
                        "price": round(max(level, 1) * TICK, 2),
                        "size": int(sizes[i]),
                        "event_ts": event_ts,
                    }
                )
        self._second += 1
        return EventBatch(second=self._second - 1, prices=prices, trades=trades)

    def _spike_symbols(self) -> tuple[int, np.ndarray]:
        """(events, their symbols) for a second of a spiky burst: the steady rate spread
        by activity as always, the burst's extra events on its few spike symbols, mixed
        in time."""
        cfg, rng = self.config, self._rng
        if self._second % cfg.burst_every_s == 0 or self._spiking is None:
            self._spiking = rng.choice(len(self.symbols), size=cfg.spike_symbols, replace=False)
        steady = int(rng.poisson(cfg.rate))
        extra = int(rng.poisson(cfg.rate * (cfg.burst_factor - 1.0)))
        sym = np.concatenate(
            [
                rng.choice(len(self.symbols), size=steady, p=self._activity),
                rng.choice(self._spiking, size=extra),
            ]
        )
        return steady + extra, rng.permutation(sym)

    def _walk(self, sym: np.ndarray, steps: np.ndarray) -> np.ndarray:
        """Mid price (in ticks) after each event's step, walking each symbol independently."""
        order = np.argsort(sym, kind="stable")
        sorted_sym, sorted_steps = sym[order], steps[order]
        cumulative = np.cumsum(sorted_steps)
        group_start = np.r_[True, sorted_sym[1:] != sorted_sym[:-1]]
        starts = np.flatnonzero(group_start)
        # Subtract the running total at each symbol's first event to restart the walk.
        offsets = np.repeat(
            cumulative[starts] - sorted_steps[starts], np.diff(np.r_[starts, len(sym)])
        )
        walked_sorted = self._mid_ticks[sorted_sym] + (cumulative - offsets)
        walked_sorted = np.maximum(walked_sorted, 100)
        mid = np.empty_like(walked_sorted)
        mid[order] = walked_sorted
        last = np.r_[starts[1:] - 1, len(sym) - 1] if len(sym) else np.array([], dtype=int)
        self._mid_ticks[sorted_sym[last]] = walked_sorted[last]
        return mid
