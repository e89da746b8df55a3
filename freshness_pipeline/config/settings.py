"""Everything a user can set, in one typed, frozen object built in one place.

`load_settings(environ, overrides)` reads the `FRESHNESS_*` environment variables (and CLI
flags, passed as overrides under the same names), validates each, and returns `Settings`.
This is the only module that reads the environment: definitions, CLI, experiment and
benches receive what it builds. `SETTINGS` below is the table of every variable; the
docs/SETTINGS.md's table is generated from it (`python -m freshness_pipeline.config.settings`)
and a test keeps the two equal.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from freshness_pipeline.catalog.declaration import DeclarationError
from freshness_pipeline.catalog.jobs import JOBS, JobSpec, laid_out, load_jobs
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.kafka_client import KafkaClientConfigError, load_properties
from freshness_pipeline.config.scheduler_settings import (
    AUTOMATIONS,
    CHAIN_MODES,
    DEFAULT_INTERVAL_S,
    DEFAULT_MAX_WAIT_S,
    MIN_TICK_S,
    TMIN_MODES,
    SchedulerSettings,
)
from freshness_pipeline.hudi.inputs import InputsError, load_inputs
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.location import CA_BUNDLE_OPTION, LocationError
from freshness_pipeline.scheduling.clustering import MIB, ClusteringSettings
from freshness_pipeline.scheduling.cost_model import COST_MODES, CostPrior
from freshness_pipeline.scheduling.planner import POLICIES
from freshness_pipeline.scheduling.staleness_target import MIN_WINDOW_S, StalenessTarget

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]

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


def shown_path(path: Path | str) -> str:
    """A path as a report shows it: relative to the checkout when inside it, else its last
    two parts, so nothing committed names the folders of the machine it ran on."""
    resolved = Path(path).resolve()
    if resolved.is_relative_to(PROJECT_ROOT):
        return resolved.relative_to(PROJECT_ROOT).as_posix() or "."
    return "<outside the checkout>/" + "/".join(resolved.parts[-2:])


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


def _choice(options: tuple[str, ...]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if text not in options:
            raise ValueError(f"not one of {', '.join(options)}")
        return text

    return parse


def _int_at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        number = int(text)
        if number < low:
            raise ValueError(f"below {low}")
        return number

    return parse


def _folder(text: str) -> Path:
    return Path(text).expanduser().resolve()


def _text(text: str) -> str:
    return text


def _existing_file(text: str) -> Path:
    path = Path(text).expanduser().resolve()
    if not path.is_file():
        raise ValueError(f"{path} is not a file")
    return path


def _kafka_client_file(text: str) -> tuple[Path, dict[str, str]]:
    """The file and its properties, read once (refused: a key this project sets, a
    secret others can read; the reason names keys only)."""
    path = Path(text).expanduser().resolve()
    try:
        return path, load_properties(path)
    except KafkaClientConfigError as exc:
        raise ValueError(str(exc)) from None


def _jobs(text: str) -> dict[str, JobSpec]:
    """One or more folders of declared jobs (separated like PATH, e.g. the bundled market
    jobs beside your own); every problem of every file, one line each."""
    folders = [Path(p).expanduser().resolve() for p in text.split(os.pathsep) if p.strip()]
    try:
        return load_jobs(*folders)
    except DeclarationError as exc:
        raise ValueError(f"{len(exc.problems)} problem(s):\n{exc}") from exc


def _cost_prior(text: str) -> CostPrior:
    path = Path(text).expanduser()
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise ValueError(f"no such file: {path}") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not JSON: {exc}") from exc
    prior = CostPrior.from_json(data)
    return replace(prior, source=prior.source or str(path))


def _port(text: str) -> int:
    number = int(text)
    if not 1 <= number <= 65535:
        raise ValueError("outside 1-65535")
    return number


def _bootstrap(text: str) -> str:
    """host:port[,host:port...] as a Kafka client takes it."""
    for server in text.split(","):
        match = _HOST_PORT.match(server.strip())
        if not match or not 1 <= int(match.group(1)) <= 65535:
            raise ValueError(f"{server!r} is not host:port")
    return ",".join(server.strip() for server in text.split(","))


def _topic(text: str) -> str:
    if not _TOPIC_NAME.match(text) or text in (".", ".."):
        raise ValueError("a Kafka topic name has 1-249 of a-z A-Z 0-9 . _ -")
    return text


def _spark_master(text: str) -> str:
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


def _jvm_size(text: str) -> str:
    if not re.fullmatch(r"\d+[kmgt]?", text.lower()):
        raise ValueError("a number with an optional k, m, g or t suffix")
    return text


def _postgres_url(text: str) -> str:
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


def _endpoint(text: str) -> str:
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError("not an http:// or https:// URL with a host")
    if parts.path not in ("", "/") or parts.query:
        raise ValueError("an endpoint has no path")
    return text.rstrip("/")


def _seconds_or_off(text: str) -> int | None:
    """`off` (None), or a whole number of seconds of at least 1."""
    if text.strip().lower() == "off":
        return None
    number = int(text)
    if number < 1:
        raise ValueError("below 1")
    return number


def _fraction(text: str) -> float:
    number = float(text)
    if not 0 <= number < 1:
        raise ValueError("outside 0 (inclusive) to 1 (exclusive)")
    return number


def _clustered_tables(text: str) -> tuple[str, ...]:
    """`none`, or a comma list of raw and job tables."""
    if text.strip().lower() == "none":
        return ()
    names = tuple(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    known = (*RAW_TABLES, *JOBS)
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        raise ValueError(f"{', '.join(unknown) or 'nothing'} is not one of {', '.join(known)}")
    return names


def _bool(text: str) -> bool:
    lowered = text.strip().lower()
    if lowered not in ("true", "false", "1", "0", "yes", "no"):
        raise ValueError("not true or false")
    return lowered in ("true", "1", "yes")


SETTINGS: tuple[Setting, ...] = (
    Setting("FRESHNESS_LAKEHOUSE", "<checkout>/.lakehouse/tables",
            "root of the Hudi tables", "a folder, file://..., or s3://bucket/prefix",
            Lakehouse.parse),
    Setting("FRESHNESS_LANDING", "<checkout>/.lakehouse/landing",
            "landing folder shared by the replayer and ingestion", "a folder",
            _folder),
    Setting("FRESHNESS_STATE_DIR", "<checkout>/.lakehouse",
            "folder of the project's own files beside the tables: the processes' logs, the "
            "Spark service's working folder (its Connect artifacts), experiment and chaos "
            "runs unless told where", "a folder", _folder),
    Setting("FRESHNESS_JARS_DIR", "<checkout>/.cache/jars",
            "folder of the Hudi bundle, the Spark Connect jar and our Hudi guard jar",
            "a folder", _folder),
    Setting("FRESHNESS_PROFILE", "local",
            "`local`: embedded defaults; `cluster`: the demo also starts Postgres, a Spark "
            "standalone master + worker (and the object store) and points everything at them",
            " or ".join(PROFILES), _choice(PROFILES)),
    Setting("FRESHNESS_CLUSTER_SECURE", "false",
            "the cluster profile's servers as a firm runs them: a CA made for them, Postgres "
            "over TLS only, the object store over HTTPS, Spark with spark.authenticate, Kafka "
            "over SASL_SSL (docs/DEPLOY.md, connecting securely)", "true or false", _bool),
    Setting("FRESHNESS_CLUSTER_LAKEHOUSE", "object_store",
            "where the cluster profile keeps a lakehouse FRESHNESS_LAKEHOUSE leaves local: "
            "`folder` (that folder) or `object_store` (the local S3 store it starts; "
            "s3://lakehouse/tables)", " or ".join(CLUSTER_LAKEHOUSES),
            _choice(CLUSTER_LAKEHOUSES)),
    Setting("FRESHNESS_SPARK_MASTER", "local[*]",
            "Spark master of the Spark service and of a process's own Spark (ingestion, "
            "`--spark local` runs); the cluster profile sets its own master's URL",
            "local[N], local[*], spark://host:port, yarn, k8s://...", _spark_master),
    Setting("FRESHNESS_SPARK_DRIVER_HOST", None,
            "address a driver binds and executors call back on (`spark.driver.host` and "
            "`bindAddress`); unset: 127.0.0.1 for a local master, Spark's choice otherwise",
            "a host name or IP address", _text),
    Setting("FRESHNESS_SPARK_AUTH_SECRET", None,
            "shared secret of a Spark cluster run with `spark.authenticate` (the master, its "
            "workers, our drivers and executors prove they hold it); reaches the JVMs "
            "through their environment, never a command line", "a secret", _text,
            secret=True),
    Setting("FRESHNESS_SPARK_REMOTE_CA", None,
            "CA (PEM) the Spark service proxy's certificate chains to, for a run reaching the "
            "service through it (`freshness connect-proxy`; with _CERT and _KEY)", "a file",
            _existing_file),
    Setting("FRESHNESS_SPARK_REMOTE_CERT", None,
            "this host's client certificate (PEM) for the Spark service proxy", "a file",
            _existing_file),
    Setting("FRESHNESS_SPARK_REMOTE_KEY", None,
            "its private key (PEM, readable by its owner only)", "a file", _existing_file),
    Setting("FRESHNESS_SPARK_SERVICE_OPEN", "false",
            "let the Spark service bind a non-loopback FRESHNESS_SPARK_SERVICE_BIND without "
            "the proxy: Spark Connect has no authentication, so only where a network "
            "control (a Kubernetes NetworkPolicy, a security group) already keeps strangers "
            "out", "true or false", _bool),
    Setting("FRESHNESS_SPARK_CORES_MAX", "2",
            "cores one application (the Spark service, ingestion) takes on a `spark://` "
            "master (`spark.cores.max`)", "an integer of at least 1", _int_at_least(1)),
    Setting("FRESHNESS_SPARK_EXECUTOR_MEMORY", "2g",
            "executor memory of an application on a `spark://` master",
            "a JVM size such as 2g", _jvm_size),
    Setting("FRESHNESS_SPARK_REMOTE", None,
            "Spark Connect URL of your own Connect server; runs use it and the demo starts "
            "none", "sc://host:port", _text),
    Setting("FRESHNESS_SPARK_MODE", "service",
            "`service`: the demo starts a local shared Spark service; `local`: every run "
            "starts its own Spark", " or ".join(SPARK_MODES), _choice(SPARK_MODES)),
    Setting("FRESHNESS_INGEST_SPARK", "own",
            "`own`: ingestion runs its own Spark driver (a second JVM); `service`: it commits "
            "through the Spark service the runs use (FRESHNESS_SPARK_REMOTE or the stack's), "
            "one JVM for both; each commit is fenced by its checkpoint either way",
            " or ".join(INGEST_SPARKS), _choice(INGEST_SPARKS)),
    Setting("FRESHNESS_RUN_START", "forkserver",
            "how a code server starts a run's process: `forkserver`: a fork of one process "
            "that imported the definitions once (`run_start.py`); `spawn`: Dagster's own, a "
            "new Python that imports Dagster, PySpark and the definitions per run",
            " or ".join(RUN_STARTS), _choice(RUN_STARTS)),
    Setting("FRESHNESS_HANDOFF", "false",
            "`true`: in a run of several tables (a chain), a step reads its parent's new rows "
            "from the parent's result kept in the run's session instead of from Hudi, where "
            "the two are equal (execution/handoff.py); off by default: on local disk the Hudi read "
            "is the cheaper (docs/BENCHMARKS.md, rows handed on in memory)",
            "true or false", _bool),
    Setting("FRESHNESS_SPARK_SERVICE_PORT", "15002", "port of the local Spark service",
            "a port number 1-65535", _int_at_least(1)),
    Setting("FRESHNESS_SPARK_SERVICE_BIND", "127.0.0.1",
            "address the local Spark service's Connect port listens on; 0.0.0.0 serves "
            "other machines too (anyone who reaches it can run SQL)", "an IP address", _text),
    Setting("FRESHNESS_SPARK_SERVICE_MEMORY", "4g", "driver memory of the local Spark service",
            "a JVM size such as 4g", _jvm_size),
    Setting("FRESHNESS_SPARK_JAVA_OPTIONS", None,
            "extra JVM options for the Spark drivers the project starts (the service, "
            "ingestion's, a run's own), e.g. JIT or GC settings to measure "
            "(`make profile-service`); unset: the JVM's defaults", "JVM options", _text),
    Setting("FRESHNESS_SPARK_CODEGEN", "true",
            "`false`: the Spark drivers the project starts evaluate queries interpreted "
            "(whole-stage code generation and expression compilation off): no Java compiled "
            "per query, nor JIT-compiled after it (docs/BENCHMARKS.md); `true`: Spark's "
            "generated code, its classes kept for 2,000 queries' stages", "true or false",
            _bool),
    Setting("FRESHNESS_SPARK_KRYO_POOL", "shared",
            "`shared`: the Spark drivers the project starts keep one pool of Kryo "
            "serializers per JVM (io.freshness.spark.SharedPoolKryoSerializer); `spark`: "
            "Spark's own, a pool per task, so every shuffle task builds its Kryo instances "
            "again (docs/BENCHMARKS.md)", "shared or spark",
            _choice(("shared", "spark"))),
    Setting("FRESHNESS_SPARK_LOCAL_FS", "java",
            "how the Spark drivers the project starts read and set local files' permissions: "
            "`java` (io.freshness.hadoop.NioLocalFileSystem, a system call); `hadoop`: "
            "Hadoop's own, which without its native library starts a chmod or ls process "
            "per file (docs/BENCHMARKS.md)", "java or hadoop",
            _choice(("java", "hadoop"))),
    Setting("FRESHNESS_SPARK_CONF_SOURCES", "drop",
            "`drop`: the Spark drivers the project starts write Hadoop configurations for "
            "tasks without each entry's source files (a Java agent, "
            "freshness_pipeline/jvm/agent/HadoopConfSources.java: Hadoop gzips every "
            "source name, about a thousand streams for each task Hudi runs); `hadoop`: "
            "Hadoop's own (docs/BENCHMARKS.md)", "drop or hadoop",
            _choice(("drop", "hadoop"))),
    Setting("FRESHNESS_SPARK_SERVICE_SHARED_CODE", "false",
            "`true`: the Spark service's Connect sessions that bring no code of their own share "
            "one class loader, so Spark's generated classes are compiled once, not again in "
            "every run (Spark 3.5's Connect server gives each session class loaders of its "
            "own, and Spark's code cache is keyed by them; a Java agent, jvm/agent, routes "
            "that; docs/BENCHMARKS.md); `false`: Spark's own behaviour",
            "true or false", _bool),
    Setting("FRESHNESS_POSTGRES_URL", None,
            "Dagster's storage (runs, event log, schedules) in this Postgres database; unset: "
            "SQLite in DAGSTER_HOME (the cluster profile starts a local Postgres)",
            f"{POSTGRES_SCHEME}://user@host:port/database", _postgres_url,
            secret=True),  # a bad one may hold a password: the error never quotes it
    Setting("FRESHNESS_POSTGRES_PASSWORD", None,
            "password of FRESHNESS_POSTGRES_URL's user (Dagster reads it from this variable; "
            "never written to a file)", "text", _text, secret=True),
    Setting("FRESHNESS_POSTGRES_SSLMODE", None,
            "libpq's sslmode for Dagster's Postgres and our own checks: `verify-full` with "
            "your CA (FRESHNESS_POSTGRES_SSLROOTCERT) checks the server's certificate and "
            "name; unset: libpq's default (`prefer`, which a man in the middle can downgrade)",
            " or ".join(SSLMODES), _choice(SSLMODES)),
    Setting("FRESHNESS_POSTGRES_SSLROOTCERT", None,
            "CA certificate (PEM) the Postgres server's certificate must chain to "
            "(`verify-ca`, `verify-full`)", "a file", _existing_file),
    Setting("FRESHNESS_POLICY", "pmb",
            "scheduling policy: `pmb`, `max_benefit` (all pending input), `random` (seeded), "
            "and the experiment's variants", ", ".join(POLICIES), _choice(POLICIES)),
    Setting("FRESHNESS_K", "3",
            "concurrent jobs; keep `max_concurrent_runs` in `dagster.yaml` equal",
            "an integer of at least 1", _int_at_least(1)),
    Setting("FRESHNESS_RUNS_AT_ONCE", None,
            "the most runs the sensor keeps in flight, of the K the run queue allows: where "
            "the Spark backend runs one job at full speed, runs beside it only share it and "
            "each pays its fixed cost, while one at a time in eta order commits each table "
            "soonest (Smith's rule for weighted completion time); unset: K",
            "an integer of at least 1", _int_at_least(1)),
    Setting("FRESHNESS_TICK_S", "10",
            "sensor interval in seconds (Dagster's sensor daemon loops every 5 s at most)",
            f"an integer of at least {MIN_TICK_S}", _int_at_least(MIN_TICK_S)),
    Setting("FRESHNESS_TMIN_MODE", "pending",
            "`pending`: per-file pending arrival range from commit metadata; `footer`: the "
            "published whole-file footer min/max", " or ".join(TMIN_MODES), _choice(TMIN_MODES)),
    Setting("FRESHNESS_COST_MODE", "three_term",
            "`three_term`: E = a + b*bytes + c*files; `two_term`: the published a + b*bytes",
            " or ".join(COST_MODES), _choice(tuple(COST_MODES))),
    Setting("FRESHNESS_SEED", "0", "seed of the `random` policy", "an integer", int),
    Setting("FRESHNESS_MAX_WAIT_S", str(DEFAULT_MAX_WAIT_S),
            "aging: a runnable job that has waited longer than this many seconds (since its "
            "pending input committed or its last run, whichever is later) takes the next "
            "free slot ahead of the policy's order; `off`: the policy's order alone (the "
            "published method)",
            "an integer of at least 1, or off", _seconds_or_off),
    Setting("FRESHNESS_FIRST_RUNS_FIRST", "true",
            "a runnable job whose table was never materialized takes the next free slot "
            "ahead of the policy's order (every table exists within a few runs of the "
            "start; costs P where runs take minutes: docs/BENCHMARKS.md, Aging)",
            "true or false", _bool),
    Setting("FRESHNESS_CHAINS", "planned",
            "`planned`: the sensor plans whole runs (METHOD 8): a job with its policy's "
            "choice, the other runnable jobs its descendants read, and the descendants "
            "worth refreshing in the same Dagster run (one launch, steps in dependency "
            "order, each committing its own table), ranked by the staleness they remove "
            "per second; `off`: one table per run, as published",
            " or ".join(CHAIN_MODES), _choice(CHAIN_MODES)),
    Setting("FRESHNESS_STEPS_AT_ONCE", "1",
            "steps a chained sensor run executes at once: above 1, a run whose chain has at "
            "least three steps that can go side by side (the views below one table) runs "
            "them in processes of their own, forked from a server that imported the "
            "definitions once (Dagster's multiprocess executor), each with its own Spark "
            "session; 1: one after another in the run's process (every other run, the "
            "peers' and a hand materialization, always does). For a backend with cores to "
            "spare: on 2 cores a step is CPU-bound and three at once save about 10 % of a "
            "wide chain's time (docs/BENCHMARKS.md)",
            "an integer of at least 1", _int_at_least(1)),
    Setting("FRESHNESS_COST_PRIOR", None,
            "a JSON file of cost coefficients the sensor starts from until a job has run a "
            "few times (per job a_s, b_s_per_mib, c_s_per_file, and run_cost_s, the fixed "
            "cost of a run): `freshness experiment` writes one from its calibration run; "
            "unset: the built-in guess (20 s a step, 3 s a run)",
            "a file", _cost_prior),
    Setting("FRESHNESS_STALENESS_TARGET_S", "300",
            "how stale (now minus the newest arrival a table reflects, METHOD 1) a derived "
            "table may get: each asset's Dagster freshness policy fails past it, and the "
            "sensor's tick names the tables past it",
            f"an integer of at least {MIN_WINDOW_S} (Dagster's shortest window)",
            _int_at_least(MIN_WINDOW_S)),
    Setting("FRESHNESS_STALENESS_WARN_FRACTION", "0.5",
            "the freshness policy warns past this fraction of the target (0: no warning)",
            f"a number from 0 to below 1, giving a warn window of at least {MIN_WINDOW_S} s",
            _fraction),
    Setting("FRESHNESS_AUTOMATION", "freshness_sensor",
            "who launches the six jobs: `freshness_sensor` (ours, by FRESHNESS_POLICY), "
            "`dagster_eager` (Dagster's `AutomationCondition.eager()`, evaluated by its daemon) "
            "or `interval` (all six every FRESHNESS_INTERVAL_S)", ", ".join(AUTOMATIONS),
            _choice(AUTOMATIONS)),
    Setting("FRESHNESS_INTERVAL_S", str(DEFAULT_INTERVAL_S),
            "period of the `interval` automation in seconds (a schedule when it is whole "
            "minutes dividing an hour, else a fixed-interval sensor)",
            f"an integer of at least {MIN_TICK_S}", _int_at_least(MIN_TICK_S)),
    Setting("FRESHNESS_JOBS", None,
            "folder of your own job declarations, one SQL file each (docs/JOBS.md), or "
            "several separated by `:` (one pipeline beside another); unset: the bundled "
            "market jobs in jobs_sql/", "folders", _jobs),
    Setting("FRESHNESS_LAYOUT", None,
            "which of its declared `layouts` each job's table takes (docs/JOBS.md); "
            "`published`: the bundled jobs' tables partitioned by the symbol's first letter, "
            "as in the thesis (its reproductions run with it); unset: each declaration's own "
            "layout", "a layout name", _text),
    Setting("FRESHNESS_INPUTS", None,
            "TOML file declaring input tables written by others (docs/USER-GUIDE.md: your "
            "own tables and topics); unset: both raw tables are ours", "a file", _folder),
    Setting("FRESHNESS_SOURCE", "landing",
            "where the stream enters: `landing` (JSON-lines files in FRESHNESS_LANDING) or "
            "`kafka` (the topics below); the replayer writes there and ingestion reads there",
            " or ".join(SOURCES), _choice(SOURCES)),
    Setting("FRESHNESS_KAFKA_BOOTSTRAP", None,
            "bootstrap servers of your own Kafka; unset: the demo starts a local broker on "
            "FRESHNESS_KAFKA_BROKER_PORT and uses it", "host:port[,host:port...]", _bootstrap),
    Setting("FRESHNESS_KAFKA_BROKER_PORT", "9092",
            "port of the local Kafka broker (127.0.0.1) the demo starts", "a port number 1-65535",
            _port),
    Setting("FRESHNESS_KAFKA_JARS_DIR", "<checkout>/.cache/kafka",
            "folder of the Kafka broker's jars (`make setup` fetches them)", "a folder", _folder),
    Setting("FRESHNESS_KAFKA_PRICE_TOPIC", "prices", "topic of price-level updates (-> price_raw)",
            "a Kafka topic name", _topic),
    Setting("FRESHNESS_KAFKA_TRADE_TOPIC", "trades", "topic of trades (-> trade_raw)",
            "a Kafka topic name", _topic),
    Setting("FRESHNESS_KAFKA_PARTITIONS", "4",
            "partitions of each topic the local broker creates (your own topics keep theirs)",
            "an integer of at least 1", _int_at_least(1)),
    Setting("FRESHNESS_KAFKA_GROUP", "freshness-ingest",
            "client group id of ingestion; offsets are never committed to it (the Hudi commit "
            "holds them)", "a group id", _text),
    Setting("FRESHNESS_KAFKA_CONFIG", None,
            "librdkafka properties file of every Kafka client of ours (ingestion, replayer, "
            "broker admin): `security.protocol`, `sasl.*`, `ssl.*` for SASL_SSL or mutual TLS "
            "(docs/DEPLOY.md, Kafka); a secret in it only when the file is mode 600",
            "a file of key=value lines", _kafka_client_file),
    Setting("FRESHNESS_KAFKA_SASL_PASSWORD", None,
            "SASL password of the Kafka client (`sasl.password`; from a secret, never a "
            "command line)", "a password", _text, secret=True),
    Setting("FRESHNESS_S3_ENDPOINT", None,
            "S3 API endpoint of an `s3://` lakehouse (unset: AWS S3 in the region)",
            "http://host:port or https://host", _endpoint),
    Setting("FRESHNESS_S3_REGION", "us-east-1", "region of an `s3://` lakehouse's bucket",
            "an AWS region name", _text),
    Setting("FRESHNESS_S3_CA_BUNDLE", None,
            "CA certificate(s) (PEM) an `https://` FRESHNESS_S3_ENDPOINT's certificate chains to, "
            "when your firm's CA signs it: trusted beside the public CAs by every client "
            "(pyarrow, hudi-rs, the JVMs' s3a)", "a file", _existing_file),
    Setting("FRESHNESS_S3_PATH_STYLE", "false",
            "path-style requests (`endpoint/bucket/key`), as most S3-compatible stores want",
            "true or false", _bool),
    Setting("AWS_ACCESS_KEY_ID", None,
            "access key of an `s3://` lakehouse (unset: the standard AWS chain: profile, "
            "role); never written to logs, run config, tags or metadata", "a key id", _text,
            secret=True),
    Setting("AWS_SECRET_ACCESS_KEY", None, "its secret key (never printed)", "a secret key",
            _text, secret=True),
    Setting("AWS_SESSION_TOKEN", None, "session token of temporary credentials (optional)",
            "a token", _text, secret=True),
    Setting("FRESHNESS_LOCK_DIR", None,
            "folder of the writers' table locks, shared by every writer (unset: each table's "
            "`.hoodie` for a local lakehouse, `<checkout>/.lakehouse/locks` for `s3://`)",
            "a folder every writer's driver sees", _folder),
    Setting("FRESHNESS_CLUSTERING_TABLES", "price_raw,trade_raw",
            "tables the clustering sensor keeps in few, time-tight files "
            "(docs/USER-GUIDE.md: clustering); `none`: off. A job table is clustered only "
            "while no run of it is active",
            "`none` or a comma list of raw and job table names", _clustered_tables),
    Setting("FRESHNESS_CLUSTERING_MIN_FILES", "260",
            "a clustering run is launched when it removes at least this many files (260: "
            "about ten raw commits, 26 partitions each; each run costs a Spark job)",
            "an integer of at least 1", _int_at_least(1)),
    Setting("FRESHNESS_CLUSTERING_SMALL_FILE_MB", "64",
            "files below this size (MiB) are merged; larger ones are left alone",
            "an integer of at least 1", _int_at_least(1)),
    Setting("FRESHNESS_CLUSTERING_TARGET_FILE_MB", "128",
            "a merged group holds at most this much (MiB): one output file",
            "an integer at least FRESHNESS_CLUSTERING_SMALL_FILE_MB", _int_at_least(1)),
    Setting("FRESHNESS_CLUSTERING_MAX_SPAN_S", "300",
            "a merged file never spans more than this many seconds of arrival_ts",
            "an integer of at least 1", _int_at_least(1)),
    Setting("FRESHNESS_CLUSTERING_TICK_S", "30",
            "interval of the clustering sensor in seconds",
            f"an integer of at least {MIN_TICK_S}", _int_at_least(MIN_TICK_S)),
    Setting("FRESHNESS_RAW_PACKING", "false",
            "ingestion packs new rows into the raw tables' small files (Hudi's copy-on-write "
            "small-file handling: each commit rewrites a partition's file with its new rows), "
            "the regime of the published experiment; off, each commit writes new files. On "
            "needs FRESHNESS_CLUSTERING_TABLES without a raw table",
            "true or false", _bool),
    Setting("FRESHNESS_FAULTS_DIR", None,
            "fault injection for tests and `make chaos` (`faults.py`); unset: off", "a folder",
            _folder),
    Setting("FRESHNESS_MEMORY_PROBE", None,
            "a diagnostic for soaks: a code server appends its memory (RSS before and after "
            "malloc_trim, tracemalloc's grown sites, objects by type) to this file as JSON "
            "lines (`memory_probe.py`); unset: off", "a file", _folder),
    Setting("FRESHNESS_MEMORY_PROBE_S", "60",
            "interval of the memory probe in seconds", "an integer of at least 5",
            _int_at_least(5)),
    Setting("FRESHNESS_MEMORY_PROBE_FRAMES", "6",
            "call-path depth the memory probe's tracemalloc keeps; 0: no tracemalloc (RSS, "
            "malloc_trim and objects by type only, without slowing every allocation)",
            "an integer of at least 0", _int_at_least(0)),
)  # fmt: skip
_BY_ENV = {s.env: s for s in SETTINGS}


@dataclass(frozen=True)
class KafkaSettings:
    """Where the Kafka source is: bootstrap servers (None: the local broker the demo starts
    on `broker_port`), a topic per stream, and how the local broker creates them."""

    bootstrap: str | None = None
    broker_port: int = 9092
    jars_dir: Path = PROJECT_ROOT / ".cache" / "kafka"
    topics: Mapping[str, str] = field(
        default_factory=lambda: {"price": "prices", "trade": "trades"}
    )
    partitions: int = 4
    group: str = "freshness-ingest"
    # The client's own librdkafka properties (FRESHNESS_KAFKA_CONFIG and the SASL
    # password): secrets among them, so never in a repr.
    client: Mapping[str, str] = field(default_factory=dict, repr=False)

    @property
    def bootstrap_servers(self) -> str:
        return self.bootstrap or f"127.0.0.1:{self.broker_port}"

    def client_config(self, **ours: object) -> dict[str, object]:
        """A confluent-kafka client's configuration: the brokers, the client's own
        properties (security), then this project's (which the file cannot set)."""
        return {"bootstrap.servers": self.bootstrap_servers, **self.client, **ours}

    def stream_of(self, topic: str) -> str:
        return next(stream for stream, name in self.topics.items() if name == topic)


@dataclass(frozen=True)
class S3Settings:
    """How to reach an `s3://` lakehouse. The keys are None when the standard AWS chain
    (profile, instance or pod role) provides them; they never appear in a repr."""

    endpoint: str | None = None
    region: str = "us-east-1"
    path_style: bool = False
    access_key_id: str | None = field(default=None, repr=False)
    secret_access_key: str | None = field(default=None, repr=False)
    ca_bundle: Path | None = None  # a private CA an https endpoint's certificate chains to
    session_token: str | None = field(default=None, repr=False)

    def storage_options(self) -> dict[str, str]:
        """For hudi-rs (object_store keys) and pyarrow (lakehouse.Location.filesystem)."""
        options = {"aws_region": self.region}
        if self.endpoint:
            options["aws_endpoint_url"] = self.endpoint
            options["aws_allow_http"] = str(self.endpoint.startswith("http://")).lower()
        options["aws_virtual_hosted_style_request"] = str(not self.path_style).lower()
        if self.ca_bundle:
            options[CA_BUNDLE_OPTION] = str(self.ca_bundle)
        # object_store's option names are the environment variables' in lower case.
        options |= {name.lower(): value for name, value in self.credential_env().items()}
        return options

    def credential_env(self) -> dict[str, str]:
        """The keys as the standard AWS chain's environment variables (for a child JVM)."""
        keys = (self.access_key_id, self.secret_access_key, self.session_token)
        names = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN")
        return {name: value for name, value in zip(names, keys, strict=True) if value}

    def spark_conf(self) -> dict[str, str]:
        """`spark.hadoop.fs.s3a.*` for Spark's s3a file system; no secrets (Spark logs its
        configuration): the keys reach the JVM through its environment (the AWS chain) or,
        for a process's own driver, its Hadoop configuration (spark.apply_lakehouse_conf)."""
        conf = {
            "spark.hadoop.fs.s3a.impl": "org.apache.hadoop.fs.s3a.S3AFileSystem",
            "spark.hadoop.fs.s3a.path.style.access": str(self.path_style).lower(),
            "spark.hadoop.fs.s3a.endpoint.region": self.region,
            # Keep directory markers: by default s3a deletes every parent marker after each
            # write (one bulk delete per file), which costs a request per file on AWS and
            # which folder-backed stores (s3proxy) refuse for a non-empty folder, so s3a
            # retried it for minutes per write. Hudi never relies on markers.
            "spark.hadoop.fs.s3a.directory.marker.retention": "keep",
            # Keys set in the Hadoop configuration first, then the standard AWS chain
            # (environment, system properties, profile, container and instance roles).
            "spark.hadoop.fs.s3a.aws.credentials.provider": ",".join(
                [
                    "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider",
                    "com.amazonaws.auth.DefaultAWSCredentialsProviderChain",
                ]
            ),
        }
        if self.endpoint:
            conf["spark.hadoop.fs.s3a.endpoint"] = self.endpoint
            conf["spark.hadoop.fs.s3a.connection.ssl.enabled"] = str(
                self.endpoint.startswith("https://")
            ).lower()
        return conf


@dataclass(frozen=True)
class Settings:
    """The resolved settings of one process."""

    lakehouse: Lakehouse
    landing_dir: Path
    jars_dir: Path
    state_dir: Path = PROJECT_ROOT / ".lakehouse"  # logs, the Spark service's folder, runs
    profile: str = "local"
    cluster_lakehouse: str = "folder"
    cluster_secure: bool = False
    spark_master: str = "local[*]"
    spark_driver_host: str | None = None
    spark_cores_max: int = 2
    spark_auth_secret: str | None = field(default=None, repr=False)  # a secret: never printed
    # (CA, certificate, key) of a run reaching the Spark service through its TLS proxy
    spark_remote_tls: tuple[Path, Path, Path] | None = None
    spark_service_open: bool = False
    spark_executor_memory: str = "2g"
    postgres_url: str | None = None
    postgres_password: str | None = field(default=None, repr=False)  # a secret: never printed
    postgres_sslmode: str | None = None
    postgres_sslrootcert: Path | None = None
    spark_remote: str | None = None
    spark_mode: str = "service"  # the shared Spark service (spark_service.py) or "local"
    ingest_spark: str = "own"  # ingestion's own Spark driver, or the Spark service's
    run_start: str = "forkserver"  # how a code server starts runs (run_start.py)
    handoff: bool = False  # a chain's steps read their parents' rows from memory (handoff.py)
    layout: str | None = None  # the declared layout the jobs' tables take (FRESHNESS_LAYOUT)
    spark_service_port: int = 15002
    spark_service_memory: str = "4g"
    spark_java_options: str | None = None  # appended to the drivers' JVM options
    spark_codegen: bool = True  # Spark compiles each query's code (False: interpreted)
    # the service's Connect sessions without code of their own share one class loader
    spark_service_shared_code: bool = False
    spark_kryo_shared_pool: bool = True  # one pool of Kryo instances per JVM
    spark_java_local_fs: bool = True  # local file permissions by Java, not chmod/ls processes
    spark_conf_sources: bool = False  # Hadoop configurations for tasks keep their sources
    spark_service_bind: str = "127.0.0.1"
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    staleness_target: StalenessTarget = field(default_factory=StalenessTarget)
    clustering: ClusteringSettings = field(default_factory=ClusteringSettings)
    raw_packing: bool = False  # ingestion packs the raw tables' small files (published regime)
    faults_dir: Path | None = None  # fault injection (faults.py); None: off
    memory_probe: Path | None = None  # memory_probe.py's output file; None: off
    memory_probe_s: int = 60
    memory_probe_frames: int = 6  # 0: no tracemalloc
    # The jobs to run, in dependency order (FRESHNESS_JOBS; the bundled market jobs).
    jobs: Mapping[str, JobSpec] = field(default_factory=lambda: JOBS)
    source: str = "landing"  # "landing" folder or "kafka" topics
    kafka: KafkaSettings = field(default_factory=KafkaSettings)
    s3: S3Settings = field(default_factory=S3Settings)
    # The variables' texts this value was built from (secrets among them: never printed),
    # so a child process given them as its environment builds the same value.
    texts: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def postgres_params(self) -> dict[str, str]:
        """libpq's TLS parameters for Dagster's Postgres (sslmode, sslrootcert), as set."""
        params = {}
        if self.postgres_sslmode:
            params["sslmode"] = self.postgres_sslmode
        if self.postgres_sslrootcert:
            params["sslrootcert"] = str(self.postgres_sslrootcert)
        return params

    def changed(self, changes: Mapping[str, str | None]) -> Settings:
        """These settings with some variables set to other texts (None or "": back to
        the default), validated like the original; this value itself never changes."""
        _check_names(changes)
        texts = dict(self.texts)
        for name, value in changes.items():
            if value:
                texts[name] = value
            else:
                texts.pop(name, None)
        return load_settings(environ=texts)

    def table_uri(self, table: str) -> str:
        """A table as Spark spells it (the lakehouse's spelling; see lakehouse.py)."""
        return self.lakehouse.table_uri(table)

    def is_external(self, table: str) -> bool:
        """Whether a declared input is written by someone else (ingestion leaves it be)."""
        return self.lakehouse.is_external(table)

    def lakehouse_at(self, uri: str) -> Lakehouse:
        """Another lakehouse root reached like this one (the same store, keys and lock
        folder), e.g. a resource's `lakehouse_root`."""
        lakehouse = Lakehouse.parse(uri)
        if lakehouse.root.is_local:
            return lakehouse
        return Lakehouse(
            lakehouse.root.with_storage_options(self.s3.storage_options()),
            self.lakehouse.lock_dir or str(PROJECT_ROOT / ".lakehouse" / "locks"),
        )

    def table_path(self, table: str) -> Path:
        """Local path of a table (a local lakehouse only)."""
        return self.lakehouse.table(table).local_path()

    @property
    def lakehouse_root(self) -> str:
        return self.lakehouse.uri

    @property
    def ingests_through_service(self) -> bool:
        """Ingestion commits through the Spark service (FRESHNESS_INGEST_SPARK=service and a
        service to reach), not its own Spark driver."""
        return self.ingest_spark == "service" and bool(self.spark_remote)

    @property
    def is_local(self) -> bool:
        return self.lakehouse.root.is_local


def load_settings(
    environ: Mapping[str, str] | None = None, overrides: Mapping[str, str | None] | None = None
) -> Settings:
    """Settings from the environment (or `environ`), with `overrides` (CLI flags, under the
    same variable names) winning; raises SettingsError naming a bad variable. Called once,
    by an entry point (the CLI, the definitions, a bench's main); everything below it is
    handed the value."""
    env = dict(os.environ if environ is None else environ)
    _check_names(overrides or {})
    _refuse_retired(env)
    _read_renamed(env)
    for name, value in (overrides or {}).items():
        if value is not None:
            env[name] = str(value)
    texts = {s.env: env[s.env] for s in SETTINGS if env.get(s.env)}
    values = {s.env: s.value(texts.get(s.env)) for s in SETTINGS}
    s3 = _s3_settings(values)
    _check_postgres_tls(values)
    _check_cost_prior(values)
    return Settings(
        lakehouse=_lakehouse(values, s3),
        landing_dir=values["FRESHNESS_LANDING"],
        jars_dir=values["FRESHNESS_JARS_DIR"],
        state_dir=values["FRESHNESS_STATE_DIR"],
        profile=values["FRESHNESS_PROFILE"],
        cluster_lakehouse=values["FRESHNESS_CLUSTER_LAKEHOUSE"],
        cluster_secure=values["FRESHNESS_CLUSTER_SECURE"],
        spark_master=values["FRESHNESS_SPARK_MASTER"],
        spark_driver_host=values["FRESHNESS_SPARK_DRIVER_HOST"] or None,
        spark_cores_max=values["FRESHNESS_SPARK_CORES_MAX"],
        spark_auth_secret=values["FRESHNESS_SPARK_AUTH_SECRET"] or None,
        spark_remote_tls=_remote_tls(values),
        spark_service_open=values["FRESHNESS_SPARK_SERVICE_OPEN"],
        spark_executor_memory=values["FRESHNESS_SPARK_EXECUTOR_MEMORY"],
        postgres_url=values["FRESHNESS_POSTGRES_URL"] or None,
        postgres_password=values["FRESHNESS_POSTGRES_PASSWORD"] or None,
        postgres_sslmode=values["FRESHNESS_POSTGRES_SSLMODE"] or None,
        postgres_sslrootcert=values["FRESHNESS_POSTGRES_SSLROOTCERT"],
        spark_remote=values["FRESHNESS_SPARK_REMOTE"] or None,
        spark_mode=values["FRESHNESS_SPARK_MODE"],
        ingest_spark=values["FRESHNESS_INGEST_SPARK"],
        run_start=values["FRESHNESS_RUN_START"],
        handoff=values["FRESHNESS_HANDOFF"],
        spark_service_port=values["FRESHNESS_SPARK_SERVICE_PORT"],
        spark_service_memory=values["FRESHNESS_SPARK_SERVICE_MEMORY"],
        spark_java_options=values["FRESHNESS_SPARK_JAVA_OPTIONS"] or None,
        spark_codegen=values["FRESHNESS_SPARK_CODEGEN"],
        spark_service_shared_code=values["FRESHNESS_SPARK_SERVICE_SHARED_CODE"],
        spark_kryo_shared_pool=values["FRESHNESS_SPARK_KRYO_POOL"] == "shared",
        spark_java_local_fs=values["FRESHNESS_SPARK_LOCAL_FS"] == "java",
        spark_conf_sources=values["FRESHNESS_SPARK_CONF_SOURCES"] == "hadoop",
        spark_service_bind=values["FRESHNESS_SPARK_SERVICE_BIND"],
        scheduler=_scheduler_settings(values),
        staleness_target=_staleness_target(values),
        clustering=_clustering_settings(values),
        raw_packing=values["FRESHNESS_RAW_PACKING"],
        faults_dir=values["FRESHNESS_FAULTS_DIR"],
        memory_probe=values["FRESHNESS_MEMORY_PROBE"],
        memory_probe_s=values["FRESHNESS_MEMORY_PROBE_S"],
        memory_probe_frames=values["FRESHNESS_MEMORY_PROBE_FRAMES"],
        jobs=laid_out(values["FRESHNESS_JOBS"] or JOBS, values["FRESHNESS_LAYOUT"]),
        layout=values["FRESHNESS_LAYOUT"] or None,
        source=values["FRESHNESS_SOURCE"],
        kafka=_kafka_settings(values),
        s3=s3,
        texts=texts,
    )


def is_setting(name: str) -> bool:
    """Whether a variable is one of the settings (SETTINGS)."""
    return name in _BY_ENV


# Settings that no longer exist, with what replaced them: set, they are refused rather
# than ignored, so a deployment never runs on a knob it believes is on.
RETIRED = {
    "FRESHNESS_CHAIN_DESCENDANTS": "FRESHNESS_CHAINS (planned or off)",
    "FRESHNESS_CHAIN_FIRST_RUNS": "FRESHNESS_CHAINS (planned or off)",
}


# Settings under a new name: the old one is still read, as the new one, and said to be
# renamed; both set to different values is refused.
RENAMED = {
    "FRESHNESS_STEP_PARALLEL": "FRESHNESS_STEPS_AT_ONCE",
}


def _refuse_retired(env: Mapping[str, str]) -> None:
    for name, instead in RETIRED.items():
        if env.get(name):
            raise SettingsError(f"{name} is no longer a setting; use {instead}")


def _read_renamed(env: dict[str, str]) -> None:
    """Each renamed setting a user still sets, read under its new name (`env` changed)."""
    for old, new in RENAMED.items():
        value = env.get(old)
        if not value:
            continue
        if env.get(new) and env[new] != value:
            raise SettingsError(f"{old} (renamed {new}) and {new} differ; set only {new}")
        log.warning("%s is now %s; read as %s=%s", old, new, new, value)
        env[new] = value


def _remote_tls(values: Mapping[str, Any]) -> tuple[Path, Path, Path] | None:
    """The three files of a TLS client of the Spark service proxy: all or none."""
    names = (
        "FRESHNESS_SPARK_REMOTE_CA",
        "FRESHNESS_SPARK_REMOTE_CERT",
        "FRESHNESS_SPARK_REMOTE_KEY",
    )
    given = [values[n] for n in names]
    if not any(given):
        return None
    if not all(given):
        missing = ", ".join(n for n, v in zip(names, given, strict=True) if not v)
        raise SettingsError(f"a TLS client of the Spark service proxy also needs {missing}")
    ca, cert, key = given
    return ca, cert, key


def _check_cost_prior(values: Mapping[str, Any]) -> None:
    """A cost prior names only jobs these settings run (the bundled ones, or
    FRESHNESS_JOBS's declarations)."""
    prior = values["FRESHNESS_COST_PRIOR"]
    if prior is None:
        return
    jobs = values["FRESHNESS_JOBS"] or JOBS
    unknown = sorted({job for job, _ in prior.jobs} - set(jobs))
    if unknown:
        raise SettingsError(
            f"FRESHNESS_COST_PRIOR ({prior.source}) has no job called {', '.join(unknown)} "
            "among the jobs to run (FRESHNESS_JOBS)"
        )


def _check_postgres_tls(values: Mapping[str, Any]) -> None:
    """A verifying sslmode names the CA to verify with: libpq would otherwise look for
    ~/.postgresql/root.crt of whichever user runs the process."""
    mode = values["FRESHNESS_POSTGRES_SSLMODE"]
    if mode in ("verify-ca", "verify-full") and not values["FRESHNESS_POSTGRES_SSLROOTCERT"]:
        raise SettingsError(
            f"FRESHNESS_POSTGRES_SSLMODE={mode} needs FRESHNESS_POSTGRES_SSLROOTCERT: the CA "
            "certificate the server's must chain to"
        )


def _check_names(changes: Mapping[str, object]) -> None:
    for name in changes:
        if name not in _BY_ENV:
            raise SettingsError(f"{name} is not a setting; settings: {', '.join(_BY_ENV)}")


def _scheduler_settings(values: Mapping[str, Any]) -> SchedulerSettings:
    return _checked(
        SchedulerSettings,
        policy=values["FRESHNESS_POLICY"],
        k=values["FRESHNESS_K"],
        runs_at_once=values["FRESHNESS_RUNS_AT_ONCE"],
        tick_s=values["FRESHNESS_TICK_S"],
        tmin_mode=values["FRESHNESS_TMIN_MODE"],
        cost_mode=values["FRESHNESS_COST_MODE"],
        seed=values["FRESHNESS_SEED"],
        automation=values["FRESHNESS_AUTOMATION"],
        interval_s=values["FRESHNESS_INTERVAL_S"],
        max_wait_s=values["FRESHNESS_MAX_WAIT_S"],
        first_runs_first=values["FRESHNESS_FIRST_RUNS_FIRST"],
        chains=values["FRESHNESS_CHAINS"],
        cost_prior=values["FRESHNESS_COST_PRIOR"],
        steps_at_once=values["FRESHNESS_STEPS_AT_ONCE"],
    )


def _staleness_target(values: Mapping[str, Any]) -> StalenessTarget:
    return _checked(
        StalenessTarget,
        fail_s=values["FRESHNESS_STALENESS_TARGET_S"],
        warn_fraction=values["FRESHNESS_STALENESS_WARN_FRACTION"],
    )


def _checked(build: Callable[..., Any], **fields: Any) -> Any:
    """`build(**fields)`, its refusal (a ValueError naming the setting) as a SettingsError."""
    try:
        return build(**fields)
    except ValueError as exc:
        raise SettingsError(str(exc)) from exc


def _clustering_settings(values: Mapping[str, Any]) -> ClusteringSettings:
    try:
        clustering = ClusteringSettings(
            tables=values["FRESHNESS_CLUSTERING_TABLES"],
            min_files=values["FRESHNESS_CLUSTERING_MIN_FILES"],
            small_file_bytes=values["FRESHNESS_CLUSTERING_SMALL_FILE_MB"] * MIB,
            target_file_bytes=values["FRESHNESS_CLUSTERING_TARGET_FILE_MB"] * MIB,
            max_span_s=values["FRESHNESS_CLUSTERING_MAX_SPAN_S"],
            tick_s=values["FRESHNESS_CLUSTERING_TICK_S"],
        )
    except ValueError as exc:
        raise SettingsError(
            "FRESHNESS_CLUSTERING_TARGET_FILE_MB="
            f"{values['FRESHNESS_CLUSTERING_TARGET_FILE_MB']} is not accepted: expected at "
            f"least FRESHNESS_CLUSTERING_SMALL_FILE_MB ({exc})"
        ) from exc
    packed_and_clustered = sorted(set(clustering.tables) & set(RAW_TABLES))
    if values["FRESHNESS_RAW_PACKING"] and packed_and_clustered:
        # Packing rewrites a raw file on every commit while clustering merges the same
        # files: the two writers would conflict on every file group they share.
        raise SettingsError(
            "FRESHNESS_RAW_PACKING=true and FRESHNESS_CLUSTERING_TABLES="
            f"{','.join(clustering.tables)} both rewrite {', '.join(packed_and_clustered)}: "
            "expected packing off, or the raw tables out of FRESHNESS_CLUSTERING_TABLES "
            "(e.g. none)"
        )
    return clustering


def _s3_settings(values: Mapping[str, Any]) -> S3Settings:
    s3 = S3Settings(
        endpoint=values["FRESHNESS_S3_ENDPOINT"],
        region=values["FRESHNESS_S3_REGION"],
        path_style=values["FRESHNESS_S3_PATH_STYLE"],
        ca_bundle=values["FRESHNESS_S3_CA_BUNDLE"],
        access_key_id=values["AWS_ACCESS_KEY_ID"] or None,
        secret_access_key=values["AWS_SECRET_ACCESS_KEY"] or None,
        session_token=values["AWS_SESSION_TOKEN"] or None,
    )
    if bool(s3.access_key_id) != bool(s3.secret_access_key):
        raise SettingsError(
            "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are set together or not at all "
            "(unset both to use the standard AWS credential chain)"
        )
    return s3


def input_readers(jobs: Mapping[str, JobSpec]) -> dict[str, tuple[str, ...]]:
    """Each table the jobs read incrementally that no job writes, with the jobs reading it."""
    readers: dict[str, list[str]] = {}
    for name, spec in jobs.items():
        for table in spec.inputs:
            if table not in jobs:
                readers.setdefault(table, []).append(name)
    return {table: tuple(names) for table, names in readers.items()}


def _lakehouse(values: Mapping[str, Any], s3: S3Settings) -> Lakehouse:
    lakehouse: Lakehouse = values["FRESHNESS_LAKEHOUSE"]
    lock_dir: Path | None = values["FRESHNESS_LOCK_DIR"]
    if not lakehouse.root.is_local:
        lakehouse = Lakehouse(
            lakehouse.root.with_storage_options(s3.storage_options()),
            str(lock_dir or PROJECT_ROOT / ".lakehouse" / "locks"),
        )
    elif lock_dir is not None:
        lakehouse = Lakehouse(lakehouse.root, str(lock_dir))
    try:
        readers = input_readers(values["FRESHNESS_JOBS"] or JOBS)
        return lakehouse.with_inputs(
            load_inputs(values["FRESHNESS_INPUTS"], lakehouse.root, s3.storage_options(), readers)
        )
    except InputsError as exc:
        raise SettingsError(f"FRESHNESS_INPUTS: {exc}") from exc


def _kafka_settings(values: Mapping[str, Any]) -> KafkaSettings:
    topics = {
        "price": values["FRESHNESS_KAFKA_PRICE_TOPIC"],
        "trade": values["FRESHNESS_KAFKA_TRADE_TOPIC"],
    }
    if topics["price"] == topics["trade"]:
        raise SettingsError(
            f"FRESHNESS_KAFKA_PRICE_TOPIC and FRESHNESS_KAFKA_TRADE_TOPIC are both "
            f"{topics['price']!r}: expected two different topics (one per raw table)"
        )
    client_file, client = values["FRESHNESS_KAFKA_CONFIG"] or (None, {})
    password = values["FRESHNESS_KAFKA_SASL_PASSWORD"]
    if password:
        if "sasl.password" in client:
            raise SettingsError(
                f"FRESHNESS_KAFKA_CONFIG ({client_file}) sets sasl.password and so does "
                "FRESHNESS_KAFKA_SASL_PASSWORD: keep one"
            )
        client = {**client, "sasl.password": password}
    return KafkaSettings(
        client=client,
        bootstrap=values["FRESHNESS_KAFKA_BOOTSTRAP"] or None,
        broker_port=values["FRESHNESS_KAFKA_BROKER_PORT"],
        jars_dir=values["FRESHNESS_KAFKA_JARS_DIR"],
        topics=topics,
        partitions=values["FRESHNESS_KAFKA_PARTITIONS"],
        group=values["FRESHNESS_KAFKA_GROUP"],
    )


def child_environment(
    settings: Settings | None = None, *, extra: Mapping[str, str | None] | None = None
) -> dict[str, str]:
    """The environment of a process the project starts: this process's variables that are
    not settings, then `settings`' own (so a Python child builds the same Settings value
    from it), then `extra` (None removes a variable). Without `settings` (a server that
    reads none of ours), this process's environment as it is, plus `extra`."""
    env = dict(os.environ)
    if settings is not None:
        env = {name: value for name, value in env.items() if name not in _BY_ENV}
        env.update(settings.texts)
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def settings_table() -> str:
    """docs/SETTINGS.md's table, generated from SETTINGS."""
    lines = ["| variable | default | meaning | accepted |", "|---|---|---|---|"]
    for s in SETTINGS:
        default = f"`{s.default}`" if s.default is not None else "unset"
        lines.append(f"| `{s.env}` | {default} | {s.meaning} | {s.accepted} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(settings_table())
