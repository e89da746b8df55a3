"""Where things live, with embedded defaults a fresh clone can run on.

Every path is overridable by an environment variable so the same code runs on a
laptop (local folder lakehouse) and against a cluster and object store.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent

RAW_TABLES = ("price_raw", "trade_raw")
MASTER_TABLE = "company_master"
REJECTS_TABLE = "raw_rejects"
STREAMS = ("price", "trade")  # landing sub-folder per stream
STREAM_TABLE = {"price": "price_raw", "trade": "trade_raw"}


def _path_from_env(env: Mapping[str, str], name: str, default: Path) -> Path:
    value = env.get(name)
    return Path(value).expanduser().resolve() if value else default


@dataclass(frozen=True)
class Settings:
    """Resolved locations of the lakehouse, the landing area and the JVM jars."""

    lakehouse_root: str
    landing_dir: Path
    jars_dir: Path
    spark_master: str
    spark_remote: str | None
    # The shared Spark service (spark_service.py) started by `freshness demo`/experiment.
    spark_mode: str = "service"  # "service" or "local" (a JVM per process)
    spark_service_port: int = 15002
    spark_service_memory: str = "4g"
    faults_dir: Path | None = None  # fault injection (faults.py); None: off

    def table_uri(self, table: str) -> str:
        return f"{self.lakehouse_root.rstrip('/')}/{table}"

    def table_path(self, table: str) -> Path:
        """Local path of a table (only meaningful for a local lakehouse)."""
        uri = self.table_uri(table)
        return Path(uri.removeprefix("file://"))

    @property
    def is_local(self) -> bool:
        return "://" not in self.lakehouse_root or self.lakehouse_root.startswith("file://")


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from the environment (or `environ`), falling back to the checkout's folders."""
    env = os.environ if environ is None else environ
    lakehouse = env.get("FRESHNESS_LAKEHOUSE")
    if lakehouse is None:
        lakehouse = str(PROJECT_ROOT / ".lakehouse" / "tables")
    elif "://" not in lakehouse:
        lakehouse = str(Path(lakehouse).expanduser().resolve())
    return Settings(
        lakehouse_root=lakehouse,
        landing_dir=_path_from_env(
            env, "FRESHNESS_LANDING", PROJECT_ROOT / ".lakehouse" / "landing"
        ),
        jars_dir=_path_from_env(env, "FRESHNESS_JARS_DIR", PROJECT_ROOT / ".cache" / "jars"),
        spark_master=env.get("FRESHNESS_SPARK_MASTER", "local[*]"),
        spark_remote=env.get("FRESHNESS_SPARK_REMOTE") or None,
        spark_mode=_spark_mode(env.get("FRESHNESS_SPARK_MODE", "service")),
        spark_service_port=int(env.get("FRESHNESS_SPARK_SERVICE_PORT", "15002")),
        spark_service_memory=env.get("FRESHNESS_SPARK_SERVICE_MEMORY", "4g"),
        faults_dir=Path(env["FRESHNESS_FAULTS_DIR"]).resolve()
        if env.get("FRESHNESS_FAULTS_DIR")
        else None,
    )


def _spark_mode(value: str) -> str:
    if value not in ("service", "local"):
        raise ValueError(f"FRESHNESS_SPARK_MODE must be 'service' or 'local', not {value!r}")
    return value
