"""`freshness` command line: demo, experiment, spark-service, kafka-broker, replay, ingest,
record, load-master, lineage.

`freshness demo` is the README's main command: it starts the shared Spark service, loads
the company master, then starts the replayer, ingestion and Dagster (webserver + daemon)
as child processes (stack.py), prints the UI address, and on Ctrl-C stops them in order
(stream first, ingestion after its current commit, Dagster, the Spark service last) so
the lakehouse is left consistent.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.lab.commands import add_lab_parser
from freshness_pipeline.lab.experiment.command import add_experiment_parser
from freshness_pipeline.runtime.object_store import ObjectStoreError
from freshness_pipeline.runtime.stack import INGEST_READY, StopFlag
from freshness_pipeline.stream.cli_args import add_stream_args, burst_fields
from freshness_pipeline.stream.universe import DEFAULT_UNIVERSE_SIZE

if TYPE_CHECKING:
    pass

log = logging.getLogger("freshness")


def _stream_config(args: argparse.Namespace):
    from freshness_pipeline.stream.generator import StreamConfig

    return StreamConfig(
        seed=args.seed,
        rate=args.rate,
        universe_size=args.universe_size,
        **burst_fields(args),
    )


def cmd_load_master(args: argparse.Namespace) -> int:
    from freshness_pipeline.ingestion.master import load_company_master
    from freshness_pipeline.runtime.object_store import check_object_store
    from freshness_pipeline.runtime.spark import build_spark_session

    check_object_store(args.settings)  # a bad S3 lakehouse fails here, before Spark starts
    spark = build_spark_session(args.settings, app_name="load_master")
    loaded = load_company_master(spark, args.settings, args.universe_size)
    print("company_master loaded" if loaded else "company_master already up to date")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    from freshness_pipeline.stream.replayer import (
        ReplayConfig,
        generated_batches,
        on_wall_clock,
        recorded_batches,
        replay,
    )

    config = ReplayConfig(
        speedup=args.speedup,
        flush_interval_s=args.flush_interval,
        malformed_rate=args.malformed_rate,
        duration_s=args.duration,
    )
    batches = (
        recorded_batches(Path(args.file)) if args.file else generated_batches(_stream_config(args))
    )
    if args.event_clock == "wall":
        batches = on_wall_clock(batches, int(time.time()))
    settings = args.settings
    if settings.source == "kafka":
        from freshness_pipeline.stream.kafka_sink import KafkaSink

        sink = KafkaSink(settings.kafka)
        produced = replay(batches, sink, config, should_stop=StopFlag())
        print(f"produced {produced} to {settings.kafka.bootstrap_servers}")
        return 0
    landed = replay(batches, settings.landing_dir, config, should_stop=StopFlag())
    print(f"landed {landed}")
    return 0


def cmd_record(args: argparse.Namespace) -> int:
    from freshness_pipeline.stream.replayer import record_stream

    count = record_stream(_stream_config(args), int(args.duration), Path(args.out))
    print(f"recorded {count} events to {args.out}")
    return 0


def cmd_ingest(args: argparse.Namespace) -> int:
    from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
    from freshness_pipeline.runtime.spark import build_spark_session, ingestion_java_options

    config = IngestConfig(
        commit_interval_s=args.commit_interval,
        max_files_per_commit=args.max_files,
        **({"clean_every": args.clean_every} if args.clean_every is not None else {}),
    )
    from freshness_pipeline.runtime.object_store import check_object_store

    check_object_store(args.settings)  # a bad S3 lakehouse fails here, before Spark starts
    # Its own Spark driver, or with FRESHNESS_INGEST_SPARK=service the Spark service's
    # (FRESHNESS_SPARK_REMOTE): each commit is fenced by its checkpoint, so a batch a killed
    # ingestor left running there is committed once (hudi/write.py).
    remote = None if args.settings.ingests_through_service else ""
    spark = build_spark_session(
        args.settings,
        app_name="ingestion",
        remote=remote,
        java_options=ingestion_java_options(args.settings),
    )
    if args.settings.ingests_through_service:
        from freshness_pipeline.runtime.spark_service import join_ingest_pool

        join_ingest_pool(spark)  # its commits go before the runs' tasks
    if args.load_master is not None:
        from freshness_pipeline.ingestion.master import load_company_master

        # The stack's way: the master is written while the Spark service and Dagster start
        # beside it, and ingestion (which reads its symbols next) needs it first anyway.
        load_company_master(spark, args.settings, args.load_master)
    # After Spark: PySpark's own SIGINT handler cancels running jobs; ours lets the
    # current commit finish instead.
    stop = StopFlag()
    ingestor: Ingestor
    if args.settings.source == "kafka":
        from freshness_pipeline.ingestion.kafka_ingest import KafkaIngestor

        ingestor = KafkaIngestor(spark, args.settings, config, max_messages=args.max_messages)
    else:
        ingestor = Ingestor(spark, args.settings, config)
    log.info(INGEST_READY)  # the stack starts the stream only once this is logged
    if args.once:
        for result in ingestor.ingest_once():
            print(result)
        ingestor.close()
        return 0
    ingestor.run(should_stop=stop)
    return 0


def cmd_spark_service(args: argparse.Namespace) -> int:
    from freshness_pipeline.runtime.spark_service import SparkService, service_config

    config = service_config(args.settings, args.settings.state_dir / "logs")
    stop = StopFlag()
    with SparkService(config) as service:
        print(
            f"Spark service listening at {service.url} (log: {config.log_path}).\n"
            f"Point runs at it with: export FRESHNESS_SPARK_REMOTE={service.url}\n"
            "Press Ctrl-C to stop.",
            flush=True,
        )
        while not stop() and service.running():
            stop.wait(1.0)
    return 0 if stop() else 1


def cmd_connect_proxy(args: argparse.Namespace) -> int:
    from freshness_pipeline.runtime.connect_proxy import ConnectProxy, ProxyConfig

    host, _, port = args.listen.rpartition(":")
    if not host or not port.isdigit():
        print(f"--listen: expected HOST:PORT, got {args.listen!r}", file=sys.stderr)
        return 2
    missing = [str(p) for p in (args.cert, args.key, args.client_ca) if not p.is_file()]
    if missing:
        print(f"no such file: {', '.join(missing)}", file=sys.stderr)
        return 2
    target = args.target_port or args.settings.spark_service_port
    config = ProxyConfig(host, int(port), target, args.cert, args.key, args.client_ca)
    stop = StopFlag()
    with ConnectProxy(config) as proxy:
        print(
            f"TLS proxy on {args.listen} -> Spark service 127.0.0.1:{target}; clients need a "
            f"certificate signed by {args.client_ca}. Ctrl-C stops it.",
            flush=True,
        )
        while not stop():
            stop.wait(1.0)
        print(f"let {proxy.served} connections through")
    return 0


def cmd_protections(args: argparse.Namespace) -> int:
    from freshness_pipeline.runtime.preflight import protections

    for line in protections(args.settings):
        print(line)
    return 0


def cmd_kafka_broker(args: argparse.Namespace) -> int:
    from freshness_pipeline.runtime.kafka_broker import (
        KafkaBroker,
        KafkaBrokerConfig,
        broker_state_dir,
    )

    settings = args.settings
    config = KafkaBrokerConfig.from_settings(settings.kafka, broker_state_dir(settings))
    stop = StopFlag()
    with KafkaBroker(config) as broker:
        print(
            f"Kafka broker listening at {broker.bootstrap_servers} (log: {config.log_path}; "
            f"topics {dict(config.topics or {})}).\n"
            "Point the replayer and ingestion at it with: export FRESHNESS_SOURCE=kafka "
            f"FRESHNESS_KAFKA_BOOTSTRAP={broker.bootstrap_servers}\nPress Ctrl-C to stop.",
            flush=True,
        )
        while not stop() and broker.running():
            stop.wait(1.0)
    return 0 if stop() else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from freshness_pipeline.runtime.cluster_profile import ClusterProfile, start_stack
    from freshness_pipeline.runtime.stack import Stack, StackConfig

    settings = args.settings
    stop = StopFlag()
    profile = None
    env: dict[str, str] = {}
    if settings.profile == "cluster":
        # The servers a deployment already has (Postgres, a Spark master and worker),
        # started here; the stack then sees nothing but settings pointing at them.
        print("Starting Postgres and the Spark master and worker...", flush=True)
        profile = ClusterProfile(settings).start()
        env = profile.env
    market_readers = jobs_reading_the_market(settings)
    if args.jobs_only and market_readers:
        print(
            "freshness demo --jobs-only: without the market stream nothing writes what "
            f"these jobs read: {market_readers}",
            file=sys.stderr,
        )
        return 2
    market = not args.jobs_only and bool(market_readers)
    if not market:
        # Your own tables only: the raw tables' clustering has nothing to cluster.
        env = {**env, "FRESHNESS_CLUSTERING_TABLES": "none"}
        print(
            f"Your jobs only ({', '.join(settings.jobs)}): no market stream, no company "
            "master, no clustering.",
            flush=True,
        )
    config = StackConfig(
        stream=_stream_config(args),
        speedup=args.speedup,
        malformed_rate=args.malformed_rate,
        commit_interval_s=args.commit_interval,
        spark_mode=settings.spark_mode,
        host=args.host,
        port=args.port,
        dagster_home=profile.dagster_home if profile else None,
        env={**env, "FRESHNESS_SOURCE": settings.source},
        market=market,
    )
    stack = Stack(config, settings)
    what = "loading the company master" if market else "Dagster"
    print(f"Starting the Spark service and {what} (about 30 s)...", flush=True)
    start_stack(stack, profile)
    spark = stack.spark_url or "a local Spark per run (--spark local)"
    stack_settings = stack.settings
    source = (
        f"Kafka at {stack.kafka_bootstrap} (topics {', '.join(settings.kafka.topics.values())})"
        if stack_settings.source == "kafka"
        else str(stack_settings.landing_dir)
    )
    if not market:
        source = "none (your inputs: " + ", ".join(_external_inputs(stack_settings)) + ")"
    print(
        f"\nLakehouse:  {stack_settings.lakehouse_root}\nStream in:  {source}\n"
        f"Logs:       {stack.config.logs_dir}\nSpark:      {spark} (master "
        f"{stack_settings.spark_master})\n"
        f"Dagster:    {stack_settings.postgres_url or 'SQLite'} in {stack.dagster_home}\n"
        f"Dagster UI: http://{args.host}:{args.port}\n"
        "Press Ctrl-C to stop (the stream stops first, ingestion finishes its commit).\n",
        flush=True,
    )
    deadline = time.monotonic() + args.run_for if args.run_for else None
    failed = 0
    try:
        while not stop():
            # A dead Spark service, ingestion or Dagster is restarted; a run whose worker
            # died is marked failed, and the sensor retries it.
            for event in stack.supervise():
                print(event, flush=True)
            replay = dict(stack.exited()).get("replay")
            if replay:
                print(f"replay exited with code {replay}; see {stack.config.logs_dir}/replay.log")
                failed = replay
            if failed or (deadline and time.monotonic() >= deadline):
                break
            stop.wait(1.0)
    finally:
        try:
            stack.stop()
        finally:
            if profile:
                profile.stop()  # after the stack: the Spark cluster, then Postgres
    print("stopped; all child processes have exited")
    return failed


def jobs_reading_the_market(settings) -> str:
    """The jobs that read a table only the market stream writes (the raw tables and the
    company master, where not declared someone else's in FRESHNESS_INPUTS), as
    `job: table` pairs; empty: the jobs need no market stream."""
    from freshness_pipeline.catalog.tables import MASTER_TABLE, RAW_TABLES

    inputs = settings.lakehouse.inputs
    ours = {t for t in (*RAW_TABLES, MASTER_TABLE) if not (t in inputs and inputs[t].external)}
    pairs = [
        f"{name}: {table}"
        for name, spec in settings.jobs.items()
        for table in (*spec.inputs, *spec.dimensions)
        if table in ours and table not in settings.jobs
    ]
    return "; ".join(pairs)


def _external_inputs(settings) -> list[str]:
    inputs = settings.lakehouse.inputs
    return [f"{name} at {d.location.spark}" for name, d in inputs.items() if d.external] or ["none"]


def cmd_lineage(args: argparse.Namespace) -> int:
    """Prints the six job assets' column lineage (no Spark, no server)."""
    from freshness_pipeline.execution.lineage import render

    sys.stdout.write(render(args.format, args.asset or None))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Checks a folder of job declarations (FRESHNESS_JOBS unless one is given) against
    themselves and the tables they read, without running anything: one line per problem."""
    from freshness_pipeline.execution.check import (
        change_problems,
        check_jobs,
        input_changes,
        input_schemas,
        layout_problems,
    )

    settings = args.settings
    # With a folder, the settings (FRESHNESS_INPUTS among them) were built for its jobs
    # (_setting_flags), after its declarations loaded (main): settings.jobs are its jobs.
    jobs = dict(settings.jobs)
    schemas, problems = input_schemas(jobs, settings.lakehouse)
    problems += [str(p) for p in check_jobs(jobs, schemas)]
    problems += [str(p) for p in layout_problems(jobs, settings.lakehouse)]
    changes = input_changes(jobs, settings.lakehouse)
    problems += [str(p) for p in change_problems(jobs, changes)]
    if problems:
        return _print_problems(problems)
    print(f"{len(jobs)} job(s) checked, no problem: {', '.join(jobs)}")
    return 0


def _declaration_problems(folder: Path) -> list[str]:
    """A folder's declaration problems, one line each (none: it loads)."""
    from freshness_pipeline.catalog.declaration import DeclarationError
    from freshness_pipeline.catalog.jobs import load_jobs

    try:
        load_jobs(folder.expanduser().resolve())
    except DeclarationError as exc:
        return [str(p) for p in exc.problems]
    return []


def _print_problems(problems: list[str]) -> int:
    for line in problems:
        print(line)
    print(f"{len(problems)} problem(s)", file=sys.stderr)
    return 1


def cmd_rebuild(args: argparse.Namespace) -> int:
    """Moves job tables aside so that their jobs write them again, whole, in the layout
    their declarations now give (Hudi cannot change a partitioning in place). The tables
    that read them keep their watermarks: the rebuilt rows carry the arrivals they had."""
    from freshness_pipeline.execution.rebuild import RebuildError, move_aside

    settings = args.settings
    try:
        for table in args.tables:
            where = move_aside(settings, table)
            print(f"{table}: moved aside to {where}; its job writes it again from its inputs")
    except RebuildError as exc:
        print(f"freshness rebuild: {exc}", file=sys.stderr)
        return 2
    return 0


def _add_demo(sub) -> None:
    demo = sub.add_parser("demo", help="replay + ingestion + Dagster on embedded defaults")
    add_stream_args(demo)
    demo.add_argument("--speedup", type=float, default=1.0)
    demo.add_argument("--malformed-rate", type=float, default=0.0005)
    demo.add_argument("--commit-interval", type=float, default=10.0)
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=int, default=3000)
    demo.add_argument("--run-for", type=float, default=None, help="stop after N seconds")
    demo.add_argument(
        "--spark",
        choices=["service", "local"],
        default=None,
        help="service: one shared Spark Connect server for all runs (default, "
        "FRESHNESS_SPARK_MODE); local: every run starts its own Spark",
    )
    demo.add_argument(
        "--source",
        choices=["landing", "kafka"],
        default=None,
        help="landing: the stream goes through the landing folder; kafka: through Kafka "
        "topics, on a local broker the demo starts unless FRESHNESS_KAFKA_BOOTSTRAP is set "
        "(default FRESHNESS_SOURCE)",
    )
    demo.add_argument(
        "--profile",
        choices=["local", "cluster"],
        default=None,
        help="local: embedded defaults (FRESHNESS_PROFILE); cluster: also start Postgres "
        "and a Spark standalone master + worker and run everything on them",
    )
    demo.add_argument(
        "--secure",
        action="store_true",
        help="with --profile cluster: the servers as a firm runs them (a CA made for them, "
        "TLS Postgres, HTTPS object store, spark.authenticate, SASL_SSL Kafka; "
        "FRESHNESS_CLUSTER_SECURE)",
    )
    demo.add_argument(
        "--jobs-only",
        action="store_true",
        help="only your own jobs (FRESHNESS_JOBS) over tables someone else writes "
        "(FRESHNESS_INPUTS): no market stream, no company master, no clustering of tables "
        "the project does not write; the default when your jobs read no market table",
    )
    demo.set_defaults(func=cmd_demo)


def _add_replay(sub) -> None:
    replay = sub.add_parser("replay", help="replay the stream into the landing area")
    add_stream_args(replay)
    replay.add_argument("--file", help="replay a recorded stream file instead of generating")
    replay.add_argument("--speedup", type=float, default=1.0)
    replay.add_argument("--flush-interval", type=float, default=1.0)
    replay.add_argument("--malformed-rate", type=float, default=0.0)
    replay.add_argument("--duration", type=float, default=None, help="event-time seconds")
    replay.add_argument(
        "--event-clock",
        choices=("stream", "wall"),
        default="stream",
        help="event time as recorded or generated (stream), or moved so that the first "
        "second is now (wall: live data, for partitions by the clock)",
    )
    replay.set_defaults(func=cmd_replay)


def _add_record(sub) -> None:
    record = sub.add_parser("record", help="write a generated stream to a file")
    add_stream_args(record)
    record.add_argument("--duration", type=int, required=True, help="event-time seconds")
    record.add_argument("--out", required=True)
    record.set_defaults(func=cmd_record)


def _add_ingest(sub) -> None:
    ingest = sub.add_parser("ingest", help="commit landed events into the raw Hudi tables")
    ingest.add_argument("--commit-interval", type=float, default=10.0)
    ingest.add_argument("--max-files", type=int, default=120, help="landed files per commit")
    ingest.add_argument("--once", action="store_true", help="one cycle, then exit")
    ingest.add_argument(
        "--clean-every",
        type=int,
        default=None,
        help="clean a raw table (old file versions, failed writes) in one commit of this "
        "many (default: ingestion's own, IngestConfig.clean_every)",
    )
    ingest.add_argument(
        "--load-master",
        type=int,
        metavar="UNIVERSE_SIZE",
        help="first load the company master of this many companies (as load-master does; "
        "skipped when the table already holds them), in ingestion's own Spark",
    )
    ingest.add_argument(
        "--max-messages", type=int, default=200_000, help="Kafka messages per commit and topic"
    )
    ingest.set_defaults(func=cmd_ingest)


def _add_service(sub) -> None:
    service = sub.add_parser("spark-service", help="run the shared Spark service alone")
    service.add_argument("--port", type=int, default=None, help="default 15002")
    service.set_defaults(func=cmd_spark_service)


def _add_broker(sub) -> None:
    broker = sub.add_parser(
        "kafka-broker", help="run the local Kafka broker alone (127.0.0.1, KRaft, one node)"
    )
    broker.add_argument("--port", type=int, default=None, help="default 9092")
    broker.set_defaults(func=cmd_kafka_broker)


def _add_proxy(sub) -> None:
    proxy = sub.add_parser(
        "connect-proxy",
        help="let runs on other hosts reach the Spark service: TLS, client certificates "
        "the CA signed only (docs/DEPLOY.md)",
    )
    proxy.add_argument("--listen", required=True, help="HOST:PORT other hosts connect to")
    proxy.add_argument(
        "--target-port",
        type=int,
        default=None,
        help="the service's loopback port (default FRESHNESS_SPARK_SERVICE_PORT)",
    )
    proxy.add_argument("--cert", required=True, type=Path, help="this proxy's certificate (PEM)")
    proxy.add_argument("--key", required=True, type=Path, help="its private key (PEM)")
    proxy.add_argument(
        "--client-ca", required=True, type=Path, help="the CA a client certificate must chain to"
    )
    proxy.set_defaults(func=cmd_connect_proxy)


def _add_protections(sub) -> None:
    shown = sub.add_parser(
        "protections", help="which protection each service the settings reach is under"
    )
    shown.set_defaults(func=cmd_protections)


def _add_master(sub) -> None:
    master = sub.add_parser("load-master", help="load the company master table")
    master.add_argument("--universe-size", type=int, default=DEFAULT_UNIVERSE_SIZE)
    master.set_defaults(func=cmd_load_master)


def _add_lineage(sub) -> None:
    from freshness_pipeline.catalog.jobs import PIPELINE_ORDER

    lineage = sub.add_parser(
        "lineage",
        help="print the column lineage of the six job assets (derived from jobs_sql/)",
    )
    lineage.add_argument(
        "--format",
        choices=("markdown", "json", "dot"),
        default="markdown",
        help="markdown: a table per asset; json: OpenLineage output datasets with the "
        "columnLineage facet; dot: a Graphviz graph",
    )
    lineage.add_argument(
        "--asset", action="append", choices=PIPELINE_ORDER, help="only this asset (repeatable)"
    )
    lineage.set_defaults(func=cmd_lineage)


def _add_check(sub) -> None:
    check = sub.add_parser(
        "check",
        help="check a folder of job declarations and the tables they read (runs nothing)",
    )
    check.add_argument(
        "folder", nargs="?", help="the folder (default: FRESHNESS_JOBS, else jobs_sql/)"
    )
    check.set_defaults(func=cmd_check)


def _add_rebuild(sub) -> None:
    rebuild = sub.add_parser(
        "rebuild",
        help="move job tables aside so their jobs write them again in their declared layout "
        "(stop the demo first)",
    )
    rebuild.add_argument("tables", nargs="+", help="job tables, e.g. trade_aggr")
    rebuild.set_defaults(func=cmd_rebuild)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="freshness", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    _add_demo(sub)
    _add_replay(sub)
    _add_record(sub)
    _add_ingest(sub)
    add_experiment_parser(sub)
    _add_service(sub)
    _add_broker(sub)
    _add_proxy(sub)
    _add_protections(sub)
    _add_master(sub)
    _add_lineage(sub)
    _add_check(sub)
    _add_rebuild(sub)
    add_lab_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    # Dagster's storage migrations log each step at INFO whenever an instance is opened:
    # dozens of lines between the ones a user needs.
    logging.getLogger("alembic").setLevel(logging.WARNING)
    parser = build_parser()
    args = parser.parse_args(argv)
    if hasattr(args, "burst_every"):
        _checkadd_stream_args(parser, args)
    if getattr(args, "func", None) is cmd_check and args.folder:
        problems = _declaration_problems(Path(args.folder))
        if problems:  # each on a line of its own, before the settings are built on them
            return _print_problems(problems)
    try:
        # Built once per command, from the environment with the flags that are settings.
        args.settings = load_settings(overrides=_setting_flags(args))
    except SettingsError as exc:
        parser.error(str(exc))
    try:
        return int(args.func(args) or 0)
    except ObjectStoreError as exc:  # the preflight's one clear error, without a traceback
        parser.exit(2, f"freshness: {exc}\n")


def _setting_flags(args: argparse.Namespace) -> dict[str, str | None]:
    """CLI flags that set a setting, under the setting's variable name."""
    flags: dict[str, str | None] = {}
    if getattr(args, "profile", None):
        flags["FRESHNESS_PROFILE"] = args.profile
    if getattr(args, "spark", None):
        flags["FRESHNESS_SPARK_MODE"] = args.spark
    if getattr(args, "func", None) is cmd_spark_service and args.port:
        flags["FRESHNESS_SPARK_SERVICE_PORT"] = str(args.port)
    if getattr(args, "func", None) is cmd_kafka_broker and args.port:
        flags["FRESHNESS_KAFKA_BROKER_PORT"] = str(args.port)
    if getattr(args, "source", None):
        flags["FRESHNESS_SOURCE"] = args.source
    if getattr(args, "secure", False):
        flags["FRESHNESS_CLUSTER_SECURE"] = "true"
    if getattr(args, "func", None) is cmd_check and args.folder:
        flags["FRESHNESS_JOBS"] = str(Path(args.folder).expanduser().resolve())
    return flags


def _checkadd_stream_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Bad stream settings are refused before any process or JVM starts."""
    from freshness_pipeline.stream.generator import StreamConfig

    try:
        StreamConfig(
            rate=args.rate if args.rate is not None else 1.0,  # experiment: the mode's rate
            **burst_fields(args),
            universe_size=getattr(args, "universe_size", None) or DEFAULT_UNIVERSE_SIZE,
        )
    except ValueError as exc:
        parser.error(f"bad stream settings: {exc}")


if __name__ == "__main__":
    sys.exit(main())
