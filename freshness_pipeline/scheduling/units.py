"""Units every layer shares: times are epoch microseconds (Hudi's and the run contract's
`cutoff_u`, `t_done`), durations and the cost model seconds."""

from __future__ import annotations

US_PER_S = 1_000_000  # microseconds per second
