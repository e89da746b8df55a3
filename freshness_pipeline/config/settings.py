"""Everything a user can set, in one typed, frozen object built in one place.

`load_settings(environ, overrides)` reads the `FRESHNESS_*` environment variables (and CLI
flags, passed as overrides under the same names), validates each against its row of
`variables.SETTINGS`, and returns `Settings`. This is the only module that reads the
environment: definitions, CLI, experiment and benches receive what it builds, and its
children get `child_environment(settings)`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from freshness_pipeline.catalog.jobs import JOBS, JobSpec, laid_out
from freshness_pipeline.catalog.tables import RAW_TABLES
from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.scheduler_settings import (
    SchedulerSettings,
)
from freshness_pipeline.config.variables import BY_ENV, SETTINGS, read_renamed, refuse_retired
from freshness_pipeline.hudi.inputs import InputsError, load_inputs
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.hudi.location import CA_BUNDLE_OPTION
from freshness_pipeline.scheduling.clustering import MIB, ClusteringSettings
from freshness_pipeline.scheduling.staleness_target import StalenessTarget

log = logging.getLogger(__name__)


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
    ingest_jit: str = "c1"  # ingestion's own driver: C1 only, or the JVM's tiered JIT
    ingest_write: str = "bulk_insert"  # a raw commit's Hudi operation (ingest.raw_write_options)
    run_start: str = "forkserver"  # how a code server starts runs (run_start.py)
    handoff: bool = False  # a chain's steps read their parents' rows from memory (handoff.py)
    layout: str | None = None  # the declared layout the jobs' tables take (FRESHNESS_LAYOUT)
    spark_service_port: int = 15002
    spark_service_memory: str = "4g"
    spark_java_options: str | None = None  # appended to the drivers' JVM options
    spark_gc: str = "parallel"  # the drivers' collector: parallel, or java (the JVM's G1)
    spark_compile_scaling: int = 3  # the drivers' JIT thresholds times this (1: the JVM's)
    spark_codegen: bool = True  # Spark compiles each query's code (False: interpreted)
    # the service's Connect sessions without code of their own share one class loader
    spark_service_shared_code: bool = False
    spark_kryo_shared_pool: bool = True  # one pool of Kryo instances per JVM
    spark_java_local_fs: bool = True  # local file permissions by Java, not chmod/ls processes
    spark_conf_sources: bool = False  # Hadoop configurations for tasks keep their sources
    spark_service_bind: str = "127.0.0.1"
    scheduler: SchedulerSettings = field(default_factory=SchedulerSettings)
    staleness_target: StalenessTarget = field(default_factory=StalenessTarget)
    exactness_sample: int = 5  # keys a table's exactness check samples (0: no such check)
    exactness_schedule: str | None = None  # its cron; None: the schedule stopped
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
    refuse_retired(env)
    read_renamed(env)
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
        ingest_jit=values["FRESHNESS_INGEST_JIT"],
        ingest_write=values["FRESHNESS_INGEST_WRITE"],
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
        spark_gc=values["FRESHNESS_SPARK_GC"],
        spark_compile_scaling=values["FRESHNESS_SPARK_COMPILE_SCALING"],
        spark_service_bind=values["FRESHNESS_SPARK_SERVICE_BIND"],
        scheduler=_scheduler_settings(values),
        staleness_target=_staleness_target(values),
        exactness_sample=values["FRESHNESS_EXACTNESS_SAMPLE"],
        exactness_schedule=values["FRESHNESS_EXACTNESS_SCHEDULE"],
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
        if name not in BY_ENV:
            raise SettingsError(f"{name} is not a setting; settings: {', '.join(BY_ENV)}")


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
        launch_rule=values["FRESHNESS_LAUNCH_RULE"],
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
        env = {name: value for name, value in env.items() if name not in BY_ENV}
        env.update(settings.texts)
    for name, value in (extra or {}).items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env
