"""The Spark + Hudi session: one place that knows how Spark must be configured for Hudi.

Used by the Dagster resource (orchestration/resources.py), by ingestion and by the tests,
so every writer of the lakehouse agrees on serializer, SQL extension, catalog and time zone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

from dagster_pyspark.resources import spark_session_from_config

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


GUARD_JAR_NAME = "freshness-hudi-guard.jar"
SPARK_JVM_JAR_NAME = "freshness-spark-jvm.jar"
AGENT_JAR_NAME = "freshness-agent.jar"


class HudiBundleMissing(RuntimeError):
    """The Hudi Spark bundle jar has not been fetched (run `make setup`)."""


def find_jar(jars_dir: Path, pattern: str, what: str, artifact: str | None = None) -> Path:
    """The newest jar matching `pattern`, or HudiBundleMissing saying how to get it: from
    Maven Central (`artifact`), or built by `make setup` from our sources (None)."""
    jars = sorted(jars_dir.glob(pattern))
    if not jars:
        how = (
            f"it fetches {artifact} from Maven Central with mvn"
            if artifact
            else "it compiles freshness_pipeline/jvm/*.java with javac"
        )
        raise HudiBundleMissing(
            f"No {what} in {jars_dir}. Run `make setup` ({how}), or set FRESHNESS_JARS_DIR "
            "to a folder that holds it."
        )
    return jars[-1]


def find_hudi_bundle(jars_dir: Path) -> Path:
    return find_jar(
        jars_dir,
        "hudi-spark*-bundle_*.jar",
        "Hudi Spark bundle",
        "org.apache.hudi:hudi-spark3.5-bundle_2.12",
    )


def find_guard_jar(jars_dir: Path) -> Path:
    """Our Hudi conflict strategy (freshness_pipeline/jvm): a stale plan never commits."""
    return find_jar(jars_dir, GUARD_JAR_NAME, "Hudi guard jar")


def find_agent_jar(jars_dir: Path) -> Path:
    """Our Java agent (jvm/agent, built by `make setup`): `connect` for the service's
    Connect sessions (FRESHNESS_SPARK_SERVICE_SHARED_CODE), `hadoop-conf` for every driver
    (FRESHNESS_SPARK_CONF_SOURCES)."""
    return find_jar(jars_dir, AGENT_JAR_NAME, "Java agent jar")


def find_spark_jvm_jar(jars_dir: Path) -> Path:
    """What our drivers run in place of Spark's and Hadoop's own (freshness_pipeline/jvm/
    spark): Spark and Hadoop classes only, so a local driver loads it from its own
    classpath."""
    return find_jar(jars_dir, SPARK_JVM_JAR_NAME, "Spark JVM jar")


def s3a_jars(jars_dir: Path) -> list[Path]:
    """Spark's s3a file system: hadoop-aws (the Hadoop of the pyspark wheel) and its SDK."""
    return [
        find_jar(jars_dir, "hadoop-aws-*.jar", "hadoop-aws jar", "org.apache.hadoop:hadoop-aws"),
        find_jar(
            jars_dir,
            "aws-java-sdk-bundle-*.jar",
            "AWS SDK bundle jar",
            "com.amazonaws:aws-java-sdk-bundle",
        ),
    ]


def hudi_jars(jars_dir: Path, settings: Settings | None = None) -> list[Path]:
    """Every jar a Spark that writes our Hudi tables needs on its classpath (with s3a's
    when the lakehouse is on S3)."""
    jars = [find_hudi_bundle(jars_dir), find_guard_jar(jars_dir), find_spark_jvm_jar(jars_dir)]
    if settings is not None and not settings.is_local:
        jars += s3a_jars(jars_dir)
    return jars


def lakehouse_spark_conf(settings: Settings) -> dict[str, str]:
    """What Spark needs to reach the lakehouse: nothing for a local one, the s3a settings
    (endpoint, path style, credential chain; never the keys) for S3."""
    return {} if settings.is_local else settings.s3.spark_conf()


def apply_lakehouse_conf(session: SparkSession, settings: Settings) -> None:
    """Points this process's own driver at an S3 lakehouse at run time: the s3a settings
    and explicit keys go into its Hadoop configuration for the lakehouse's bucket only
    (s3a's per-bucket keys), so a session started before (getOrCreate, the tests' shared
    session) reaches it too, and the keys, read there by s3a's first credential provider,
    never enter Spark's configuration, which Spark logs. Needs the s3a jars on the
    classpath (hudi_jars with an S3 lakehouse, or s3a_jars)."""
    if settings.is_local:
        return
    bucket = settings.lakehouse.root.path.split("/", 1)[0]
    hadoop = session.sparkContext._jsc.hadoopConfiguration()
    for key, value in settings.s3.spark_conf().items():
        name = key.removeprefix("spark.hadoop.")
        if name != "fs.s3a.impl":
            name = name.replace("fs.s3a.", f"fs.s3a.bucket.{bucket}.", 1)
        hadoop.set(name, value)
    s3 = settings.s3
    if s3.access_key_id:
        hadoop.set(f"fs.s3a.bucket.{bucket}.access.key", s3.access_key_id)
        hadoop.set(f"fs.s3a.bucket.{bucket}.secret.key", s3.secret_access_key or "")
    if s3.session_token:
        hadoop.set(f"fs.s3a.bucket.{bucket}.session.token", s3.session_token)


LOOPBACK = "127.0.0.1"

# Spark's Kryo serializer with one pool per JVM (jvm/spark/SharedPoolKryoSerializer.java):
# Spark's own keeps its pool in the serializer each task deserializes, so every shuffle task
# built its Kryo instances again (FRESHNESS_SPARK_KRYO_POOL=shared).
SHARED_POOL_SERIALIZER = "io.freshness.spark.SharedPoolKryoSerializer"

# Hadoop's local file system with permissions read and set by Java
# (jvm/spark/NioLocalFileSystem.java): Hadoop's own, without its native library, starts a
# chmod process per file it creates and an ls per listed file whose permission is read
# (FRESHNESS_SPARK_LOCAL_FS).
LOCAL_FS_CONF = "spark.hadoop.fs.file.impl"
JAVA_LOCAL_FS = "io.freshness.hadoop.NioLocalFileSystem"

CODEGEN_CACHE_ENTRIES = 2000

# Queries evaluated without generated code (FRESHNESS_SPARK_CODEGEN=false): nothing to
# compile, nothing for the JIT to compile after it, the tasks' CPU no higher at a few
# thousand rows a step. `factoryMode` is the switch Spark's own tests use to evaluate every
# expression interpreted (Spark calls it internal); it covers projections, predicates and
# orderings outside whole-stage code.
INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


def jvm_tuning(settings: Settings) -> str:
    """The collector and JIT thresholds of the drivers the project starts (FRESHNESS_SPARK_GC,
    FRESHNESS_SPARK_COMPILE_SCALING): a young JVM spends most of its CPU compiling, and a
    step of a few thousand rows runs mostly in its first minutes' code (docs/BENCHMARKS.md)."""
    options = []
    if settings.spark_gc == "parallel":
        options.append("-XX:+UseParallelGC")
    if settings.spark_compile_scaling != 1:
        options.append(f"-XX:CompileThresholdScaling={settings.spark_compile_scaling}")
    return " ".join(options)


def ingestion_java_options(settings: Settings) -> str:
    """The JVM options of ingestion's own driver beside every driver's (FRESHNESS_INGEST_JIT):
    C1's code only, since a raw commit's work is small and C2's compiles cost it more than
    its faster code saves (docs/BENCHMARKS.md)."""
    return "-XX:TieredStopAtLevel=1" if settings.ingest_jit == "c1" else ""


def hudi_spark_conf(
    settings: Settings,
    master: str,
    jars_dir: Path,
    app_name: str = "freshness_pipeline",
    extra: dict[str, str] | None = None,
    java_options: str = "",
) -> dict[str, str]:
    """Spark settings Hudi needs, plus small-machine defaults that keep local runs quick,
    and the lakehouse's file system settings."""
    conf = {
        "spark.master": master,
        "spark.app.name": app_name,
        "spark.jars": ",".join(str(j) for j in hudi_jars(jars_dir, settings)),
        "spark.serializer": "org.apache.spark.serializer.KryoSerializer",
        "spark.kryo.registrator": "org.apache.spark.HoodieSparkKryoRegistrar",
        "spark.sql.extensions": "org.apache.spark.sql.hudi.HoodieSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.hudi.catalog.HoodieCatalog",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.shuffle.partitions": "4",
        # Spark keeps the classes it generates for queries in a cache of 100 by default;
        # the six jobs' steps need about 170 between them (13-44 each, industry_spike
        # more), so each step found its classes evicted by the others' and compiled them
        # again, and the JIT after it: 13-76 classes a step, every step. At 2,000: 0-4 a
        # step once warm (industry_spike 21-47), the JVM's CPU a round about 0.65
        # (docs/BENCHMARKS.md).
        "spark.sql.codegen.cache.maxEntries": str(CODEGEN_CACHE_ENTRIES),
        "spark.default.parallelism": "4",
        "spark.ui.enabled": "false",
        # Each step's CPU as the JVM counts it, summed per step tag (jvm/StepCpu.java in our
        # guard jar, hudi/step_cpu.py): a listener's work per task, no UI needed.
        "spark.extraListeners": "io.freshness.hudi.StepCpu",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.memory": "2g",
        # A run reads an explicit list of files; listing them is cheap locally, and Spark's
        # default (a distributed listing job once a read names more than 32 paths) cost
        # 4.5 s for 144 files on 2 cores.
        "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
        # The shared service and ingestion live for hours. Spark keeps a status record of
        # every job, stage, task and SQL execution (UI or not) up to 1,000 / 1,000 /
        # 100,000 / 1,000, and a 250 MB cache of listed files; a freshness pipeline runs
        # thousands of small jobs, so keep the recent ones only.
        "spark.ui.retainedJobs": "200",
        "spark.ui.retainedStages": "200",
        "spark.ui.retainedTasks": "10000",
        "spark.sql.ui.retainedExecutions": "100",
        "spark.sql.hive.filesourcePartitionFileCacheSize": str(64 * 1024 * 1024),
        # Timestamps are stored as UTC micros; never let the JVM's zone leak in.
        "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
        "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    }
    if master.startswith("local"):
        # A local driver has no executors elsewhere to call it back: its RPC and block
        # manager ports listen on loopback only (Spark's default is the machine's address).
        conf["spark.driver.host"] = conf["spark.driver.bindAddress"] = LOOPBACK
    conf.update(lakehouse_spark_conf(settings))
    if not settings.spark_codegen:
        conf.update(INTERPRETED)
    if settings.spark_kryo_shared_pool:
        conf["spark.serializer"] = SHARED_POOL_SERIALIZER
    if settings.spark_java_local_fs and master.startswith("local"):
        # Spark's launcher lists the jars through the file system before it adds them to
        # the classpath, so the class is on the JVM's own classpath too (its jar holds
        # nothing that needs Hudi's, which only spark.jars brings). Local masters only: a
        # cluster's executors start before they fetch our jars.
        conf[LOCAL_FS_CONF] = JAVA_LOCAL_FS
        conf["spark.driver.extraClassPath"] = str(find_spark_jvm_jar(jars_dir))
    if not settings.spark_conf_sources:
        # Every task of Hudi's reads the table's Hadoop configuration (about a thousand
        # entries, each entry's source file names in a gzip stream of their own); the agent
        # writes them as unknown, in Hadoop's own format (docs/BENCHMARKS.md).
        agent = f"-javaagent:{find_agent_jar(jars_dir)}=hadoop-conf"
        conf["spark.driver.extraJavaOptions"] += f" {agent}"
    tuning = " ".join(o for o in (jvm_tuning(settings), java_options) if o)
    if tuning:
        conf["spark.driver.extraJavaOptions"] += f" {tuning}"
    if settings.spark_java_options:
        key = "spark.driver.extraJavaOptions"
        conf[key] = f"{conf[key]} {settings.spark_java_options}"
    if settings.spark_auth_secret:
        # the secret itself travels in the environment (SPARK_AUTH_SECRET_ENV)
        conf["spark.authenticate"] = "true"
    if settings.s3.ca_bundle is not None and not settings.is_local:
        # s3a's AWS SDK trusts the JVM's truststore only: the JDK's CAs plus the bundle.
        trust = " ".join(truststore_options(settings.s3.ca_bundle))
        for side in ("driver", "executor"):
            key = f"spark.{side}.extraJavaOptions"
            conf[key] = f"{conf[key]} {trust}"
    conf.update(extra or {})
    return conf


def _authenticated_session(conf: dict[str, str], secret: str) -> SparkSession:
    """A driver of a cluster run with spark.authenticate. A standalone driver takes the
    secret only from its configuration, and pyspark passes the configuration it launches
    the JVM with as `--conf` arguments (visible to every user of the host): the JVM starts
    with the rest, and the secret is set on its SparkConf through the gateway before the
    context starts."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession as LocalSparkSession

    if SparkContext._active_spark_context is not None:  # this process's driver exists
        return LocalSparkSession.builder.getOrCreate()
    public = SparkConf(loadDefaults=False).setAll(list(conf.items()))
    gateway = launch_gateway(public)
    full = SparkConf(_jvm=gateway.jvm)  # with what the JVM started with
    full.setAll(list(conf.items())).set("spark.authenticate.secret", secret)
    context = SparkContext(gateway=gateway, conf=full)
    return LocalSparkSession(context)


def tls_channel_builder(url: str, settings: Settings):
    """A Spark Connect channel over TLS with a client certificate (the service's proxy,
    runtime/connect_proxy.py): the CA the proxy's certificate chains to, and our own
    certificate and key (pyspark's `use_ssl` knows neither)."""
    import grpc
    from pyspark.sql.connect.client import ChannelBuilder

    tls = settings.spark_remote_tls
    assert tls is not None
    ca, cert, key = (path.read_bytes() for path in tls)

    class TlsChannelBuilder(ChannelBuilder):
        def toChannel(self) -> grpc.Channel:  # noqa: N802 - pyspark's name
            credentials = grpc.ssl_channel_credentials(
                root_certificates=ca, private_key=key, certificate_chain=cert
            )
            return grpc.secure_channel(
                f"{self.host}:{self.port}", credentials, options=self._channel_options
            )

    return TlsChannelBuilder(url)


def driver_secret_env(settings: Settings) -> dict[str, str]:
    """What the environment of a spark-submit'ed driver (the Spark service) needs for a
    cluster run with spark.authenticate: a standalone driver takes the secret only from its
    configuration and `--conf` would put it on the command line, so it goes into a
    spark-defaults.conf only this user can read (SPARK_CONF_DIR). Empty without a secret."""
    import hashlib
    import tempfile

    secret = settings.spark_auth_secret
    if not secret:
        return {}
    digest = hashlib.sha256(secret.encode()).hexdigest()[:16]
    folder = Path(tempfile.gettempdir()) / f"freshness-spark-conf-{os.getuid()}-{digest}"
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    defaults = folder / "spark-defaults.conf"
    fd = os.open(defaults, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(f"spark.authenticate true\nspark.authenticate.secret {secret}\n")
    return {"SPARK_CONF_DIR": str(folder)}


# A truststore holds public certificates only; its password guards nothing secret (the
# JDK's own cacerts uses the same well-known one).
TRUSTSTORE_PASSWORD = "changeit"


def truststore_options(ca_bundle: Path) -> list[str]:
    """The JVM options that make it trust `ca_bundle` beside the JDK's CAs (a PKCS#12
    truststore built once per bundle under .cache/truststores; on a cluster, the same
    path must exist on every executor host)."""
    import hashlib

    from freshness_pipeline.runtime.tls import java_truststore

    digest = hashlib.sha256(ca_bundle.read_bytes()).hexdigest()[:16]
    path = PROJECT_ROOT / ".cache" / "truststores" / f"{digest}.p12"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        java_truststore(ca_bundle, path, TRUSTSTORE_PASSWORD)
    return [
        f"-Djavax.net.ssl.trustStore={path}",
        "-Djavax.net.ssl.trustStoreType=PKCS12",
        f"-Djavax.net.ssl.trustStorePassword={TRUSTSTORE_PASSWORD}",
    ]


def deployment_conf(master: str, settings: Settings) -> dict[str, str]:
    """What a driver needs beyond `hudi_spark_conf` on a cluster master: its share of the
    cluster (an application takes every core otherwise, and the next one would wait) and
    the address executors reach it on. Empty for a local master without a driver host."""
    conf: dict[str, str] = {}
    if master.startswith("spark://"):
        conf["spark.cores.max"] = str(settings.spark_cores_max)
        conf["spark.executor.memory"] = settings.spark_executor_memory
    if settings.spark_driver_host:
        conf["spark.driver.host"] = settings.spark_driver_host
        conf["spark.driver.bindAddress"] = settings.spark_driver_host
    return conf


def build_spark_session(
    settings: Settings,
    master: str | None = None,
    remote: str | None = None,
    jars_dir: Path | None = None,
    app_name: str = "freshness_pipeline",
    extra: dict[str, str] | None = None,
    java_options: str = "",
) -> SparkSession:
    """A Hudi-ready SparkSession: local by default, a cluster master, or Spark Connect
    (`remote`, default the settings' FRESHNESS_SPARK_REMOTE). `java_options`: a driver of
    our own gets them after every driver's (e.g. `ingestion_java_options`)."""
    remote = remote if remote is not None else settings.spark_remote
    if remote:
        # The Connect client's own builder, not pyspark.sql.SparkSession's: the latter
        # refuses a remote session in a process that already runs a local one (tests).
        from pyspark.sql.connect.session import SparkSession as RemoteSparkSession

        # The Connect server owns its jars and extensions; only session settings apply.
        builder = RemoteSparkSession.Builder()  # what `.builder` returns, typed as such
        if settings.spark_remote_tls is not None:  # through the proxy, with our certificate
            builder = builder.channelBuilder(tls_channel_builder(remote, settings))
        else:
            builder = builder.remote(remote)
        builder = builder.appName(app_name)
        builder = builder.config("spark.sql.session.timeZone", "UTC")
        for key, value in (extra or {}).items():
            builder = builder.config(key, value)
        # Not a subclass of the classic session in Spark 3.5, but the same API for all the
        # project calls on it (sql, read, table, catalog, conf, stop).
        return cast("SparkSession", builder.getOrCreate())
    master = master or settings.spark_master
    extra = {**deployment_conf(master, settings), **(extra or {})}
    conf = hudi_spark_conf(
        settings, master, jars_dir or settings.jars_dir, app_name, extra, java_options
    )
    session = (
        _authenticated_session(conf, settings.spark_auth_secret)
        if settings.spark_auth_secret
        else spark_session_from_config(conf)
    )
    session.sparkContext.setLogLevel("ERROR")
    apply_lakehouse_conf(session, settings)
    return session
