"""Kafka ingestion beside landing-folder ingestion, on the same events, in one run.

    freshness lab kafka-ingest-rate [--rate 15000] [--backlog-s 30]
        [--batch-s 10] [--rounds 2]

One seeded stream is generated twice (same seed, same virtual clock): once landed as
files into one throwaway lakehouse, once produced to a local Kafka broker (started here,
127.0.0.1, stopped by its pid) feeding a second throwaway lakehouse. Each round then
ingests the landed backlog and the Kafka backlog in turn (the order alternates), with
commits of the same event-time window (`batch_s` seconds of stream per commit and
stream: `batch_s` landed files, or as many messages as that window holds), on one Spark
driver. Prints events/s sustained by each path per round, their medians, and the ratio
Kafka / landing (targets: Kafka at least 15,000 events/s and at least 0.9 of the folder).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

from freshness_pipeline.config.settings import Settings
from freshness_pipeline.lab.bench.common import scratch


def main(argv: list[str], settings: Settings) -> int:
    parser = argparse.ArgumentParser(
        prog="freshness lab kafka-ingest-rate", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--rate", type=float, default=15_000.0)
    parser.add_argument("--backlog-s", type=int, default=30)
    parser.add_argument("--batch-s", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--partitions", type=int, default=4)
    args = parser.parse_args(argv)

    from freshness_pipeline.ingestion.master import load_company_master
    from freshness_pipeline.runtime.kafka_broker import KafkaBroker
    from freshness_pipeline.runtime.spark import build_spark_session
    from freshness_pipeline.stream.universe import DEFAULT_UNIVERSE_SIZE

    landing, kafka, broker_config = _arms(settings, args.partitions)
    print(
        f"machine: {os.cpu_count()} cores; one Spark driver for both paths; Kafka broker "
        f"{broker_config.bootstrap_servers}, {args.partitions} partitions per topic"
    )
    with KafkaBroker(broker_config):
        spark = build_spark_session(landing, app_name="bench_kafka_ingest", remote="")
        for arm in (landing, kafka):
            load_company_master(spark, arm, DEFAULT_UNIVERSE_SIZE)
        paths = _TwoPaths(spark, landing, kafka, args)
        warm = paths.fill(args.batch_s)
        for path in ("landing", "kafka"):
            elapsed, events, _ = paths.run(path, warm, args.batch_s)
            print(f"warm-up (not counted), {path}: {events} events in {elapsed:.1f} s")
        rates: dict[str, list[float]] = {"landing": [], "kafka": []}
        for round_no in range(args.rounds):
            per_stream = paths.fill(args.backlog_s)
            order = ("landing", "kafka") if round_no % 2 == 0 else ("kafka", "landing")
            for path in order:
                elapsed, events, commits = paths.run(path, per_stream, args.backlog_s)
                assert events == sum(per_stream.values()), (path, events, per_stream)
                rates[path].append(events / elapsed)
                print(
                    f"round {round_no + 1}, {path:7s}: {events} events in {commits} commits, "
                    f"{elapsed:.1f} s = {events / elapsed:,.0f} events/s"
                )
        _print_rates(rates, args)
        spark.stop()
    return 0


def _arms(given: Settings, partitions: int):
    """The landing-folder arm's settings, the Kafka arm's, and the broker both share: a
    lakehouse each in one scratch folder."""
    from freshness_pipeline.runtime.kafka_broker import KafkaBrokerConfig
    from freshness_pipeline.runtime.ports import free_port

    root, _ = scratch("bench_kafka_ingest_")
    port = free_port()
    base = {"FRESHNESS_KAFKA_BOOTSTRAP": f"127.0.0.1:{port}"}
    landing = given.changed(
        {
            **base,
            "FRESHNESS_LAKEHOUSE": str(root / "landing_lake"),
            "FRESHNESS_LANDING": str(root / "landing"),
        }
    )
    kafka = given.changed(
        {
            **base,
            "FRESHNESS_SOURCE": "kafka",
            "FRESHNESS_LAKEHOUSE": str(root / "kafka_lake"),
            "FRESHNESS_LANDING": str(root / "unused"),
        }
    )
    broker_config = KafkaBrokerConfig(
        jars_dir=given.kafka.jars_dir,
        state_dir=root / "kafka",
        port=port,
        topics=dict.fromkeys(kafka.kafka.topics.values(), partitions),
    )
    return landing, kafka, broker_config


class _TwoPaths:
    """The same generated events into the landing folder and the topics, and each path's
    ingestion of them."""

    def __init__(self, spark, landing: Settings, kafka: Settings, args: argparse.Namespace):
        from freshness_pipeline.stream.generator import StreamConfig
        from freshness_pipeline.stream.kafka_sink import KafkaSink
        from freshness_pipeline.stream.replayer import generated_batches

        self.spark, self.landing, self.kafka, self.args = spark, landing, kafka, args
        # Two generators on the same seed: the folder and the topics get the same events.
        stream = StreamConfig(seed=1, rate=args.rate)
        self.to_landing, self.to_kafka = generated_batches(stream), generated_batches(stream)
        self.sink = KafkaSink(kafka.kafka)
        self.clock_start = time.time()

    def fill(self, seconds: int) -> dict[str, int]:
        from freshness_pipeline.stream.replayer import VirtualClock, land_instantly

        start = VirtualClock(self.clock_start)
        landed = land_instantly(self.to_landing, self.landing.landing_dir, seconds, start)
        produced = land_instantly(self.to_kafka, self.sink, seconds, VirtualClock(self.clock_start))
        assert landed == produced, (landed, produced)
        self.clock_start += seconds
        return landed

    def _window(self, per_stream: dict[str, int], seconds: int) -> dict[str, int]:
        """Messages per commit and stream: `batch_s` seconds of that stream."""
        batch_s = self.args.batch_s
        return {s: max(1, math.ceil(n / seconds * batch_s)) for s, n in per_stream.items()}

    def run(self, path: str, per_stream: dict[str, int], seconds: int) -> tuple[float, int, int]:
        from freshness_pipeline.ingestion.ingest import IngestConfig, Ingestor
        from freshness_pipeline.ingestion.kafka_ingest import KafkaIngestor

        if path == "landing":
            config = IngestConfig(max_files_per_commit=self.args.batch_s)
            ingestor = Ingestor(self.spark, self.landing, config)
        else:
            messages = self._window(per_stream, seconds)
            ingestor = KafkaIngestor(self.spark, self.kafka, max_messages=messages)
        started = time.monotonic()
        events = commits = 0
        while results := ingestor.ingest_once():
            commits += len(results)
            events += sum(r.rows + r.rejects for r in results)
        elapsed = time.monotonic() - started
        ingestor.close()
        return elapsed, events, commits


def _print_rates(rates: dict[str, list[float]], args: argparse.Namespace) -> None:
    landing_rate = statistics.median(rates["landing"])
    kafka_rate = statistics.median(rates["kafka"])
    ratio = kafka_rate / landing_rate
    print(
        f"median over {args.rounds} rounds ({args.backlog_s} s of stream at "
        f"{args.rate:,.0f} events/s each, {args.batch_s} s per commit): landing "
        f"{landing_rate:,.0f} events/s, kafka {kafka_rate:,.0f} events/s, ratio "
        f"{ratio:.3f}"
    )
    print(
        f"targets: kafka >= 15,000 events/s: {'met' if kafka_rate >= 15_000 else 'missed'}; "
        f"ratio >= 0.9: {'met' if ratio >= 0.9 else 'missed'}"
    )
