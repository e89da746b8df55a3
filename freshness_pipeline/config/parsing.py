"""How a setting's text becomes a value: `Setting` (a variable, its default, what it
means and accepts, its parser), the parsers, and the error every bad value raises."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from freshness_pipeline.catalog.declaration import DeclarationError
from freshness_pipeline.catalog.jobs import JOBS, JobSpec, load_jobs
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.kafka_client import KafkaClientConfigError, load_properties
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.hudi.location import LocationError
from freshness_pipeline.scheduling.cost_model import CostPrior

log = logging.getLogger(__name__)


SPARK_MODES = ("service", "local")
INGEST_SPARKS = ("own", "service")
SPARK_AUTH_SECRET_ENV = "_SPARK_AUTH_SECRET"  # Spark's own variable for spark.authenticate
SSLMODES = ("disable", "allow", "prefer", "require", "verify-ca", "verify-full")
SOURCES = ("landing", "kafka")  # where ingestion reads the stream and the replayer writes it
# Kafka's own rule for topic names (kafka.common.internals.Topic): at most 249 of these.
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")
_HOST_PORT = re.compile(r"^[A-Za-z0-9.\-]+:(\d{1,5})$")
PROFILES = ("local", "cluster")
CLUSTER_LAKEHOUSES = ("folder", "object_store")
POSTGRES_SCHEME = "postgresql+psycopg2"
RUN_STARTS = ("forkserver", "spawn")  # how a code server starts runs (orchestration/run_start.py)


class SettingsError(ValueError):
    """A setting has a value this project cannot use: names the variable, the value and
    what is accepted."""


@dataclass(frozen=True)
class Setting:
    """One user-settable variable: its default (as a user would write it), what it means,
    what is accepted, and how its text becomes a value."""

    env: str
    default: str | None
    meaning: str
    accepted: str
    parse: Callable[[str], Any]
    secret: bool = False  # its value never appears in an error, a log or a repr

    def value(self, text: str | None) -> Any:
        if text is None or text == "":
            if self.default is None:
                return None
            text = self.default.replace("<checkout>", str(PROJECT_ROOT))
        try:
            return self.parse(text)
        except (ValueError, LocationError) as exc:
            if self.secret:
                # The reason, never the value (our parsers' reasons never quote it).
                raise SettingsError(
                    f"{self.env} is not accepted: expected {self.accepted} ({exc})"
                ) from exc
            raise SettingsError(
                f"{self.env}={text!r} is not accepted: expected {self.accepted} ({exc})"
            ) from exc


def parse_choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in options:
            raise ValueError(f"not one of {', '.join(options)}")
        return text

    return parse


def parse_int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        number = int(text)
        if number < low:
            raise ValueError(f"below {low}")
        return number

    return parse


def parse_folder(text: str) -> Path:
    return Path(text).expanduser().resolve()


def parse_text(text: str) -> str:
    return text


def parse_existing_file(text: str) -> Path:
    path = Path(text).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"{path} is not a file")
    return path


def parse_kafka_client_file(text: str) -> tuple[Path, dict[str, str]]:
    """The file and its properties, read once (refused: a key this project sets, a
    secret others can read; the reason names keys only)."""
    path = Path(text).expanduser().resolve()
    try:
        return path, load_properties(path)
    except KafkaClientConfigError as exc:
        raise ValueError(str(exc)) from None


def parse_jobs(text: str) -> dict[str, JobSpec]:
    """One or more folders of declared jobs (separated like PATH, e.g. the bundled market
    jobs beside your own); every problem of every file, one line each."""
    folders = [Path(p).expanduser().resolve() for p in text.split(os.pathsep) if p.strip()]
    try:
        return load_jobs(*folders)
    except DeclarationError as exc:
        raise ValueError(f"{len(exc.problems)} problem(s):\n{exc}") from exc


def parse_cost_prior(text: str) -> CostPrior:
    path = Path(text).expanduser()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ValueError(f"no such file: {path}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from exc
    prior = CostPrior.from_json(data)
    return replace(prior, source=prior.source or str(path))


def parse_port(text: str) -> int:
    number = int(text)
    if not 1 <= number <= 65535:
        raise ValueError("outside 1-65535")
    return number


def parse_bootstrap(text: str) -> str:
    """host:port[,host:port...] as a Kafka client takes it."""
    for server in text.split(","):
        match = _HOST_PORT.match(server.strip())
        if not match or not 1 <= int(match.group(1)) <= 65535:
            raise ValueError(f"{server!r} is not host:port")
    return ",".join(server.strip() for server in text.split(","))


def parse_topic(text: str) -> str:
    if not _TOPIC_NAME.match(text) or text in (".", ".."):
        raise ValueError("a Kafka topic name has 1-249 of a-z A-Z 0-9 . _ -")
    return text


def parse_spark_master(text: str) -> str:
    if text.startswith("spark://"):
        host, _, port = text[len("spark://") :].rpartition(":")
        if not host or not port.isdigit():
            raise ValueError("a standalone master is spark://host:port")
    elif not (
        text in ("yarn", "local[*]")
        or re.fullmatch(r"local\[\d+\]", text)
        or text.startswith("k8s://")
    ):
        raise ValueError("not a Spark master URL")
    return text


def parse_jvm_size(text: str) -> str:
    if not re.fullmatch(r"\d+[kmgt]?", text.lower()):
        raise ValueError("a number with an optional k, m, g or t suffix")
    return text


def parse_postgres_url(text: str) -> str:
    """SQLAlchemy's spelling of a Postgres database for dagster-postgres, scheme explicit
    (newer SQLAlchemy would pick psycopg 3 for a bare postgresql://), no password inside."""
    parsed = urlsplit(text)
    if parsed.scheme != POSTGRES_SCHEME:
        raise ValueError(f"the scheme must be {POSTGRES_SCHEME}://")
    if parsed.password is not None:
        raise ValueError("keep the password out of the URL: set FRESHNESS_POSTGRES_PASSWORD")
    if not parsed.username or not parsed.hostname or not parsed.path.strip("/"):
        raise ValueError("user, host and database are all required")
    _ = parsed.port  # raises ValueError on a bad port
    return text


def parse_endpoint(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an http:// or https:// URL with a host")
    if parts.path not in ("", "/") or parts.query:
        raise ValueError("an endpoint has no path")
    return text.rstrip("/")


def parse_seconds_or_off(text: str) -> int | None:
    """`off` (None), or a whole number of seconds of at least 1."""
    if text.strip().lower() == "off":
        return None
    number = int(text)
    if number < 1:
        raise ValueError("below 1")
    return number


def parse_cron_or_off(text: str) -> str | None:
    """`off` (None), or a cron expression of five fields (Dagster checks the fields)."""
    if text.strip().lower() == "off":
        return None
    fields = text.split()
    if len(fields) != 5:
        raise ValueError(f"a cron expression has five fields, not {len(fields)}")
    return " ".join(fields)


def parse_fraction(text: str) -> float:
    number = float(text)
    if not 0 <= number < 1:
        raise ValueError("outside 0 (inclusive) to 1 (exclusive)")
    return number


def parse_clustered_tables(text: str) -> tuple[str, ...]:
    """`none`, or a comma list of raw and job tables."""
    if text.strip().lower() == "none":
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    known = (*RAW_TABLES, *JOBS)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"{', '.join(unknown) or 'nothing'} is not one of {', '.join(known)}")
    return names


def parse_bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError("not true or false")
    return lowered in ("true", "1", "yes")
