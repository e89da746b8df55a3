"""The shared Spark service: Spark's Connect server through our launcher, which binds
the gRPC port to 127.0.0.1 (Spark 3.5's own server binds every interface)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assets_tests.conftest import assert_listens_on_loopback_only
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.runtime.processes import is_loopback
from freshness_pipeline.runtime.spark_service import (
    BIND_ADDRESS_CONF,
    CONNECT_SERVER_CLASS,
    SparkServiceConfig,
    server_command,
    service_config,
)


def test_command_runs_our_launcher_bound_to_the_setting(tmp_path: Path):
    argv = server_command(SparkServiceConfig(settings=load_settings(), state_dir=tmp_path))
    assert argv[argv.index("--class") + 1] == CONNECT_SERVER_CLASS
    assert f"{BIND_ADDRESS_CONF}=127.0.0.1" in argv
    assert argv[-1].endswith("freshness-connect-launcher.jar")
    wide = service_config(load_settings({"FRESHNESS_SPARK_SERVICE_BIND": "0.0.0.0"}), tmp_path)
    assert f"{BIND_ADDRESS_CONF}=0.0.0.0" in server_command(wide)


def test_the_drivers_take_the_extra_jvm_options_and_the_step_listener(tmp_path: Path):
    """FRESHNESS_SPARK_JAVA_OPTIONS reaches the service's JVM (e.g. a JIT setting to
    measure), after the options the project needs; every driver counts its steps' CPU."""
    settings = load_settings({"FRESHNESS_SPARK_JAVA_OPTIONS": "-XX:TieredStopAtLevel=1"})
    argv = server_command(SparkServiceConfig(settings=settings, state_dir=tmp_path))
    options = next(a for a in argv if a.startswith("spark.driver.extraJavaOptions="))
    assert options.startswith("spark.driver.extraJavaOptions=-Duser.timezone=UTC ")
    assert "-XX:TieredStopAtLevel=1" in options
    assert "spark.extraListeners=io.freshness.hudi.StepCpu" in argv
    plain = server_command(SparkServiceConfig(settings=load_settings({}), state_dir=tmp_path))
    assert not any("TieredStopAtLevel" in a for a in plain)


def test_the_drivers_collector_and_compile_thresholds_come_before_the_users_options(
    tmp_path: Path,
):
    """By default every driver runs the parallel collector and three times the JIT's
    thresholds; `java` and 1 give the JVM's own; FRESHNESS_SPARK_JAVA_OPTIONS comes after
    them, so a user's -XX setting wins (a collector of one's own needs FRESHNESS_SPARK_GC
    =java, since the JVM refuses two)."""

    def options(values: dict[str, str]) -> str:
        argv = server_command(SparkServiceConfig(load_settings(values), state_dir=tmp_path))
        return next(a for a in argv if a.startswith("spark.driver.extraJavaOptions="))

    default = options({})
    assert "-XX:+UseParallelGC -XX:CompileThresholdScaling=3" in default
    mine = options({"FRESHNESS_SPARK_JAVA_OPTIONS": "-XX:CompileThresholdScaling=1"})
    assert mine.index("CompileThresholdScaling=3") < mine.index("CompileThresholdScaling=1")
    jvm = options({"FRESHNESS_SPARK_GC": "java", "FRESHNESS_SPARK_COMPILE_SCALING": "1"})
    assert "UseParallelGC" not in jvm and "CompileThresholdScaling" not in jvm
    with pytest.raises(ValueError, match="FRESHNESS_SPARK_GC"):
        load_settings({"FRESHNESS_SPARK_GC": "g1"})
    with pytest.raises(ValueError, match="FRESHNESS_SPARK_COMPILE_SCALING"):
        load_settings({"FRESHNESS_SPARK_COMPILE_SCALING": "0"})


def test_ingestions_own_driver_compiles_with_c1_only_unless_told_otherwise():
    """FRESHNESS_INGEST_JIT=c1 (the default) gives ingestion's driver C1's code only, after
    every driver's options and before the user's; `tiered` leaves the JVM's JIT."""
    from freshness_pipeline.runtime.spark import hudi_spark_conf, ingestion_java_options

    settings = load_settings({"FRESHNESS_SPARK_JAVA_OPTIONS": "-Xss4m"})
    assert ingestion_java_options(settings) == "-XX:TieredStopAtLevel=1"
    conf = hudi_spark_conf(
        settings, "local[2]", settings.jars_dir, java_options=ingestion_java_options(settings)
    )
    options = conf["spark.driver.extraJavaOptions"]
    assert options.index("CompileThresholdScaling") < options.index("TieredStopAtLevel=1")
    assert options.index("TieredStopAtLevel=1") < options.index("-Xss4m")
    assert (
        "TieredStopAtLevel"
        not in hudi_spark_conf(settings, "local[2]", settings.jars_dir)[
            "spark.driver.extraJavaOptions"
        ]
    )  # every other driver keeps the tiered JIT
    assert ingestion_java_options(load_settings({"FRESHNESS_INGEST_JIT": "tiered"})) == ""
    with pytest.raises(ValueError, match="FRESHNESS_INGEST_JIT"):
        load_settings({"FRESHNESS_INGEST_JIT": "c2"})


def test_the_drivers_evaluate_queries_interpreted_when_codegen_is_off(tmp_path: Path):
    """FRESHNESS_SPARK_CODEGEN=false reaches the service's command line; on, Spark's
    generated code with a code cache that holds every job's classes."""
    off = load_settings({"FRESHNESS_SPARK_CODEGEN": "false"})
    argv = server_command(SparkServiceConfig(settings=off, state_dir=tmp_path))
    assert "spark.sql.codegen.wholeStage=false" in argv
    assert "spark.sql.codegen.factoryMode=NO_CODEGEN" in argv
    on = load_settings({"FRESHNESS_SPARK_CODEGEN": "true"})
    argv = server_command(SparkServiceConfig(settings=on, state_dir=tmp_path))
    assert not any("spark.sql.codegen.wholeStage" in a or "factoryMode" in a for a in argv)
    # the generated classes of every job's steps stay cached (Spark's default keeps 100)
    assert "spark.sql.codegen.cache.maxEntries=2000" in argv


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.1.2.3", False),
    ],
)
def test_loopback_addresses(address: str, loopback: bool):
    assert is_loopback(address) is loopback


@pytest.mark.spark
def test_service_answers_sql_and_listens_on_loopback_only(spark_service, connect_spark):
    assert connect_spark.sql("SELECT 40 + 2 AS answer").collect()[0].answer == 42
    listening = spark_service.listening()
    assert ("127.0.0.1", spark_service.config.port) in listening
    assert_listens_on_loopback_only(listening, "the Spark service")


@pytest.mark.spark
def test_ingestions_session_runs_its_jobs_in_its_own_pool(spark_service, connect_spark):
    """A session that joins ingestion's pool has its jobs scheduled there, and one that
    leaves it goes back to the runs' default pool (as the service's JVM counts them)."""
    from freshness_pipeline.hudi.step_cpu import jobs_by_pool
    from freshness_pipeline.runtime.spark_service import INGEST_POOL, join_ingest_pool

    def jobs() -> dict[str, int]:
        connect_spark.range(1000).repartition(2).count()  # at least one Spark job
        return jobs_by_pool(connect_spark)

    before = jobs()
    assert before.get("default", 0) >= 1, before
    join_ingest_pool(connect_spark)
    joined = jobs()
    assert joined.get(INGEST_POOL, 0) > before.get(INGEST_POOL, 0), (before, joined)
    assert joined.get("default", 0) == before.get("default", 0), (before, joined)
    connect_spark.conf.unset("spark.scheduler.pool")
    left = jobs()
    assert left.get("default", 0) > joined.get("default", 0), (joined, left)
    assert left.get(INGEST_POOL, 0) == joined.get(INGEST_POOL, 0), (joined, left)
    # A pool the allocation file lacks would be made on the fly with no minShare.
    log = spark_service.config.log_path.read_text(errors="replace")
    assert f"scheduler pool {INGEST_POOL}, which has not been configured" not in log


def test_the_service_shares_one_class_loader_only_when_asked(tmp_path: Path):
    """FRESHNESS_SPARK_SERVICE_SHARED_CODE puts the agent on the service's JVM, built by
    `make setup` beside the launcher."""
    on = load_settings({"FRESHNESS_SPARK_SERVICE_SHARED_CODE": "true"})
    options = next(
        a
        for a in server_command(SparkServiceConfig(settings=on, state_dir=tmp_path))
        if a.startswith("spark.driver.extraJavaOptions=")
    )
    agents = [a.split("-javaagent:", 1)[1] for a in options.split() if "-javaagent:" in a]
    connect = [a for a in agents if a.endswith("=connect")]
    assert len(connect) == 1 and Path(connect[0].split("=")[0]).is_file(), agents
    assert connect[0].split("=")[0].endswith("freshness-agent.jar")
    off = load_settings({"FRESHNESS_SPARK_SERVICE_SHARED_CODE": "false"})
    argv = server_command(SparkServiceConfig(settings=off, state_dir=tmp_path))
    assert not any("=connect" in a for a in argv)


def _classes_compiled(session, query: str) -> tuple[int, list]:
    from freshness_pipeline.hudi import step_cpu

    with step_cpu.tagged(session) as tag:
        rows = sorted(tuple(r) for r in session.sql(query).collect())
    return int(step_cpu.take(session, tag)["jvm_codegen_classes"]), rows


@pytest.mark.spark
def test_a_new_session_finds_the_classes_an_earlier_one_generated(tmp_path: Path):
    """With the agent, a query's generated classes are compiled once for every Connect
    session without code of its own (Spark 3.5 gives each session class loaders of its
    own, so every run compiled its classes again, and each request its driver's); a
    session that added a Python file keeps Spark's own class loaders and answers alike."""
    from freshness_pipeline.runtime.ports import free_port
    from freshness_pipeline.runtime.spark import build_spark_session
    from freshness_pipeline.runtime.spark_service import SparkService

    settings = load_settings({"FRESHNESS_SPARK_SERVICE_SHARED_CODE": "true"})
    config = SparkServiceConfig(
        settings=settings, state_dir=tmp_path, port=free_port(), driver_memory="2g"
    )
    # a shape no other query of the service compiled: its classes are new at first
    query = (
        "SELECT id % 7 AS k, sum(id * 3) AS s, max(id - 11) AS m "
        "FROM range(0, 5000, 1, 2) GROUP BY id % 7"
    )
    runs = []
    module = tmp_path / "own_code.py"
    module.write_text("ANSWER = 42\n")
    with SparkService(config):
        for own_code in (False, False, True):
            session = build_spark_session(settings, remote=config.url, app_name="classes")
            try:
                if own_code:
                    session.addArtifacts(str(module), pyfile=True)
                runs.append(_classes_compiled(session, query))
            finally:
                session.stop()
        log = config.log_path.read_text()
    assert "ConnectCodeCacheAgent: one class loader for sessions without code" in log
    (first, rows), (second, again), (_, isolated) = runs
    assert first > 0, runs
    assert second == 0, runs
    assert len(rows) == 7 and rows == again == isolated
