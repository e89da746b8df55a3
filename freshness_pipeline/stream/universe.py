"""The company universe: real tickers with sector and industry, extended synthetically.

`pytickersymbols` ships about 1.8k listed companies with industry tags; the published
experiment had about 5,257 US companies, so the rest are synthetic tickers that borrow
the (sector, industry) mix of the real ones. Deterministic for a given seed and size.
"""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

DEFAULT_UNIVERSE_SIZE = 5257

# pytickersymbols tags mix sectors, industries and synonyms; fold them onto the
# eleven GICS sectors so sector-level views have a sensible number of groups.
SECTOR_ALIASES = {
    "Basic Materials": "Materials",
    "Materials": "Materials",
    "Communication Services": "Communication Services",
    "Telecommunications": "Communication Services",
    "Consumer Cyclical": "Consumer Discretionary",
    "Consumer Cyclicals": "Consumer Discretionary",
    "Consumer Discretionary": "Consumer Discretionary",
    "Consumer Defensive": "Consumer Staples",
    "Consumer Non-Cyclicals": "Consumer Staples",
    "Consumer Staples": "Consumer Staples",
    "Energy": "Energy",
    "Financials": "Financials",
    "Financial Services": "Financials",
    "Health Care": "Health Care",
    "Healthcare": "Health Care",
    "Industrials": "Industrials",
    "Real Estate": "Real Estate",
    "Technology": "Information Technology",
    "Information Technology": "Information Technology",
    "Utilities": "Utilities",
}
_TICKER = re.compile(r"^[A-Z]{1,5}$")


@dataclass(frozen=True)
class Company:
    symbol: str
    name: str
    sector: str
    industry: str


def _us_symbol(stock: dict) -> str | None:
    """The company's US listing (NYSE/NASDAQ style ticker), if it has one."""
    for listing in stock.get("symbols", []):
        google = listing.get("google") or ""
        yahoo = listing.get("yahoo") or ""
        if google.startswith(("NYSE:", "NASDAQ:")) and _TICKER.match(yahoo):
            return yahoo
    symbol = (stock.get("symbol") or "").upper()
    return symbol if _TICKER.match(symbol) else None


def _sector_and_industry(tags: list[str]) -> tuple[str, str]:
    sector = next((SECTOR_ALIASES[t] for t in tags if t in SECTOR_ALIASES), "Other")
    industry = next((t.strip() for t in tags if t not in SECTOR_ALIASES), None)
    return sector, industry or sector


def real_companies() -> list[Company]:
    from pytickersymbols import PyTickerSymbols

    seen: dict[str, Company] = {}
    for stock in PyTickerSymbols().get_all_stocks():
        symbol = _us_symbol(stock)
        if symbol is None or symbol in seen:
            continue
        sector, industry = _sector_and_industry(list(stock.get("industries") or []))
        seen[symbol] = Company(symbol, stock.get("name") or symbol, sector, industry)
    return sorted(seen.values(), key=lambda c: c.symbol)


@lru_cache(maxsize=8)
def company_universe(size: int = DEFAULT_UNIVERSE_SIZE, seed: int = 7) -> tuple[Company, ...]:
    """`size` companies: the real ones first, then synthetic tickers (seeded)."""
    if size < 1:
        raise ValueError(f"universe size must be positive, got {size}")
    rng = np.random.default_rng(seed)
    real = real_companies()
    if size < len(real):
        # A seeded sample across the alphabet, so a small universe still spans partitions.
        picked = sorted(rng.choice(len(real), size=size, replace=False))
        real = [real[i] for i in picked]
    companies = list(real)
    taken = {c.symbol for c in companies}
    pairs = sorted({(c.sector, c.industry) for c in companies}) or [("Other", "Other")]
    letters = np.array(list(string.ascii_uppercase))
    while len(companies) < size:
        length = int(rng.choice([3, 4], p=[0.45, 0.55]))
        symbol = "".join(rng.choice(letters, size=length))
        if symbol in taken:
            continue
        taken.add(symbol)
        sector, industry = pairs[int(rng.integers(len(pairs)))]
        companies.append(Company(symbol, f"{symbol} Holdings (synthetic)", sector, industry))
    return tuple(sorted(companies, key=lambda c: c.symbol))


def universe_fingerprint(companies: tuple[Company, ...]) -> str:
    """Stable hash of the universe, stored with the master table to skip identical reloads."""
    digest = hashlib.sha256()
    for c in companies:
        digest.update(f"{c.symbol}|{c.name}|{c.sector}|{c.industry}\n".encode())
    return digest.hexdigest()[:16]
