"""The shared Spark service: one long-lived Spark Connect server that every run uses.

A run that starts its own JVM and loads the Hudi bundle pays about 20 s before it reads
a byte; through an already running Connect server it pays a gRPC session (about 1 s).
That fixed cost is the `a` of every job's cost model and a floor under every table's
staleness, so the demo and the experiment start this service first and point ingestion,
the company-master loader and every Dagster run at it (`FRESHNESS_SPARK_REMOTE`).

The server runs with FAIR scheduling, so K concurrent runs share the cores instead of
queueing behind each other's jobs; ingestion, when it commits through the service
(FRESHNESS_INGEST_SPARK=service), has a pool of its own that goes first.
"""

from __future__ import annotations

import ipaddress
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from freshness_pipeline.config.settings import Settings, child_environment
from freshness_pipeline.runtime.ports import port_is_open
from freshness_pipeline.runtime.processes import ServerProcess
from freshness_pipeline.runtime.spark import (
    deployment_conf,
    driver_secret_env,
    find_agent_jar,
    find_jar,
    hudi_jars,
    hudi_spark_conf,
)

# Spark's Connect server bound to one address (freshness_pipeline/jvm/connect): Spark 3.5's
# own SparkConnectServer listens on every interface and has no setting to change that.
CONNECT_SERVER_CLASS = "freshness.connect.LoopbackConnectServer"
BIND_ADDRESS_CONF = "spark.freshness.connect.bindAddress"
LAUNCHER_JAR_NAME = "freshness-connect-launcher.jar"
DEFAULT_PORT = 15002

# The default pool is FAIR: jobs of different sessions (runs) interleave their tasks
# instead of the first submitted job holding every core until it ends. Ingestion's session
# submits to its own pool, whose tasks are offered the cores first (a pool below its
# minShare goes before any other): a raw commit is small, and every job's watermark waits
# for it, so it should not queue behind a refresh's tasks.
INGEST_POOL = "ingest"
FAIR_SCHEDULER_XML = f"""<?xml version="1.0"?>
<allocations>
  <pool name="default">
    <schedulingMode>FAIR</schedulingMode>
    <weight>1</weight>
    <minShare>0</minShare>
  </pool>
  <pool name="{INGEST_POOL}">
    <schedulingMode>FIFO</schedulingMode>
    <weight>1</weight>
    <minShare>2</minShare>
  </pool>
</allocations>
"""

# Spark logs every task at INFO; the service's log keeps warnings and the server's start.
LOG4J2_PROPERTIES = """rootLogger.level = warn
rootLogger.appenderRef.stdout.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n%ex
logger.connect.name = org.apache.spark.sql.connect.service.SparkConnectServer
logger.connect.level = info
"""


def join_ingest_pool(spark) -> None:
    """Every Spark job this Connect session runs from now on goes to ingestion's pool
    (Spark copies a session's spark.* settings into each job it runs for the session)."""
    spark.conf.set("spark.scheduler.pool", INGEST_POOL)


LOOPBACK_NAMES = ("localhost",)


def is_loopback(address: str) -> bool:
    if address in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def refuse_open_bind(bind_address: str, declared_open: bool) -> None:
    """Spark Connect has no authentication: a server other hosts can reach runs anyone's
    code with the service's rights. Bound elsewhere than loopback it is refused at start,
    unless the deployment says a network control keeps strangers out."""
    if is_loopback(bind_address) or declared_open:
        return
    raise SparkServiceError(
        f"refusing to start the Spark service on {bind_address} (FRESHNESS_SPARK_SERVICE_BIND): "
        "Spark Connect has no authentication, so anyone who reaches that address could run "
        "code as the service. Bind it to 127.0.0.1 and let runs on other hosts in through "
        "`freshness connect-proxy` (TLS with client certificates) or an SSH tunnel; or, "
        "where a network control already keeps strangers out, set "
        "FRESHNESS_SPARK_SERVICE_OPEN=true (docs/DEPLOY.md)"
    )


class SparkServiceError(RuntimeError):
    """The Spark Connect server could not be started or did not come up."""


def find_connect_jar(jars_dir: Path) -> Path:
    return find_jar(
        jars_dir,
        "spark-connect_*.jar",
        "Spark Connect server jar",
        "org.apache.spark:spark-connect_2.12",
    )


def find_launcher_jar(jars_dir: Path) -> Path:
    """Our Connect server launcher, built by `make setup` (freshness_pipeline/jvm/connect)."""
    return find_jar(jars_dir, LAUNCHER_JAR_NAME, "Spark Connect launcher jar")


def spark_submit_path() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-submit"


@dataclass(frozen=True)
class SparkServiceConfig:
    # The lakehouse the service writes (s3a settings and jars for an S3 one) and the jars
    # folder. S3 keys reach the server through its environment (the standard AWS chain),
    # never its command line.
    settings: Settings
    state_dir: Path  # scheduler file and server log go here
    port: int = DEFAULT_PORT
    master: str = "local[*]"
    driver_memory: str = "4g"
    host: str = "localhost"
    bind_address: str = "127.0.0.1"  # the Connect port listens here only
    # Spark settings for the master (deployment_conf: the cluster share, the driver host)
    extra_conf: tuple[tuple[str, str], ...] = ()

    @property
    def jars_dir(self) -> Path:
        return self.settings.jars_dir

    @property
    def url(self) -> str:
        return f"sc://{self.host}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.state_dir / "spark-service.log"


def service_config(
    settings: Settings, state_dir: Path, port: int | None = None
) -> SparkServiceConfig:
    """The shared service as the settings describe it: its port, driver memory and master,
    with the master's deployment settings (cluster share, driver host)."""
    return SparkServiceConfig(
        settings=settings,
        state_dir=state_dir,
        port=port or settings.spark_service_port,
        master=settings.spark_master,
        driver_memory=settings.spark_service_memory,
        bind_address=settings.spark_service_bind,
        extra_conf=tuple(sorted(deployment_conf(settings.spark_master, settings).items())),
    )


def server_command(config: SparkServiceConfig) -> list[str]:
    """`spark-submit` of the Connect server with the Hudi bundle and our session defaults."""
    settings = config.settings
    conf = hudi_spark_conf(
        settings,
        config.master,
        config.jars_dir,
        app_name="freshness_spark_service",
        extra=dict(config.extra_conf),
    )
    conf.pop("spark.master")
    conf.pop("spark.jars")
    conf.pop("spark.driver.memory")
    conf.update(
        {
            "spark.scheduler.mode": "FAIR",
            "spark.scheduler.allocation.file": str(config.state_dir / "fairscheduler.xml"),
            "spark.connect.grpc.binding.port": str(config.port),
            BIND_ADDRESS_CONF: config.bind_address,
            "spark.driver.extraJavaOptions": (
                f"{conf['spark.driver.extraJavaOptions']} "
                f"-Dlog4j2.configurationFile={config.state_dir / 'log4j2.properties'}"
            ),
        }
    )
    if settings.spark_service_shared_code:
        agent = f"-javaagent:{find_agent_jar(config.jars_dir)}=connect"
        conf["spark.driver.extraJavaOptions"] += f" {agent}"
    connect_jar = find_connect_jar(config.jars_dir)
    launcher_jar = find_launcher_jar(config.jars_dir)
    jars = ",".join(str(j) for j in [*hudi_jars(config.jars_dir, settings), connect_jar])
    argv = [
        str(spark_submit_path()),
        "--class",
        CONNECT_SERVER_CLASS,
        "--master",
        config.master,
        "--driver-memory",
        config.driver_memory,
        "--jars",
        jars,
    ]
    for key, value in sorted(conf.items()):
        argv += ["--conf", f"{key}={value}"]
    argv.append(str(launcher_jar))
    return argv


class SparkService(ServerProcess):
    """Starts, waits for and stops one local Spark Connect server (a child process)."""

    def __init__(self, config: SparkServiceConfig) -> None:
        self.config = config
        self.process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return self.config.url

    def start(self, timeout_s: float = 180.0) -> SparkService:
        return self.launch().wait_ready(timeout_s)

    def launch(self) -> SparkService:
        """Starts the server's process and returns at once (wait_ready waits for it), so a
        caller can start other processes while the JVM comes up."""
        config = self.config
        refuse_open_bind(config.bind_address, config.settings.spark_service_open)
        if port_is_open(config.host, config.port):
            raise SparkServiceError(
                f"port {config.port} is already in use; stop the other Spark service or set "
                "FRESHNESS_SPARK_SERVICE_PORT to a free port"
            )
        argv = server_command(config)  # checks both jars before anything starts
        config.state_dir.mkdir(parents=True, exist_ok=True)
        (config.state_dir / "fairscheduler.xml").write_text(FAIR_SCHEDULER_XML)
        (config.state_dir / "log4j2.properties").write_text(LOG4J2_PROPERTIES)
        env = child_environment(
            extra={**config.settings.s3.credential_env(), **driver_secret_env(config.settings)}
        )
        env.pop("SPARK_HOME", None)  # the server comes from the pyspark wheel we pinned
        bind = dict(config.extra_conf).get("spark.driver.bindAddress")
        if bind:
            env["SPARK_LOCAL_IP"] = bind  # read by the JVM before any setting
        log = config.log_path.open("ab")
        # In its own folder: Spark Connect writes its sessions' artifacts (artifacts/spark-*)
        # under the working directory, which would otherwise be wherever it was started.
        self.process = subprocess.Popen(
            argv,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=config.state_dir,
            start_new_session=True,
        )
        log.close()
        return self

    def wait_ready(self, timeout_s: float = 180.0) -> SparkService:
        config = self.config
        assert self.process is not None, "launch() first"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SparkServiceError(
                    f"the Spark Connect server exited with code {self.process.returncode} "
                    f"while starting; see {config.log_path}"
                )
            if port_is_open(config.host, config.port):
                return self
            time.sleep(0.25)
        self.stop()
        raise SparkServiceError(
            f"the Spark Connect server did not listen on port {config.port} within "
            f"{timeout_s:.0f} s; see {config.log_path}"
        )
