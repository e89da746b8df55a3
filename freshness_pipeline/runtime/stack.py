"""The running system as child processes: the shared Spark service, the Kafka broker (with
`FRESHNESS_SOURCE=kafka`), the stream replayer, ingestion and Dagster, started in that
order and stopped in reverse.

`freshness demo` runs one stack until Ctrl-C; `freshness experiment` runs one per policy
on a fresh lakehouse. Stopping is ordered so the lakehouse is left consistent: the stream
stops first, ingestion after its current commit, Dagster next (no new runs; runs in flight
finish, queued ones are canceled), the Spark service last.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from freshness_pipeline.config.paths import PROJECT_ROOT
from freshness_pipeline.config.settings import Settings, child_environment
from freshness_pipeline.config.variables import is_setting
from freshness_pipeline.runtime.dagster_instance import open_instance, write_instance_yaml
from freshness_pipeline.runtime.kafka_broker import KafkaBroker, KafkaBrokerConfig, broker_state_dir
from freshness_pipeline.runtime.preflight import preflight, protections
from freshness_pipeline.runtime.processes import stop_process_group
from freshness_pipeline.runtime.service_discovery import ServiceAnnouncement, announce, withdraw
from freshness_pipeline.runtime.spark_service import SparkService, service_config
from freshness_pipeline.stream.generator import StreamConfig

log = logging.getLogger("freshness")
INGEST_READY = "ingestion ready: Spark is up, waiting for landed files"
# How long a stop waits for runs in flight to finish before the Spark service goes; a run
# that outlives it is cut off and fails (the service stops under it).
DRAIN_TIMEOUT_S = 240.0
ORPHAN_CHECK_S = 5.0  # how often the supervisor looks for runs whose worker died
# The code location: the name workspace.yaml's module gives it, kept when the daemon
# reaches a code server of ours (run and sensor records name their location).
CODE_LOCATION = "freshness_pipeline.definitions"
CODE_SERVER_READY_S = 240.0  # loading the definitions imports dagster and pyspark


class StopFlag:
    """Set by SIGINT/SIGTERM; long-running loops poll it and finish their current step."""

    def __init__(self) -> None:
        self._event = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, lambda *_: self._event.set())

    def __call__(self) -> bool:
        return self._event.is_set()

    def wait(self, seconds: float) -> bool:
        return self._event.wait(seconds)


def exit_on_signals() -> None:
    """SIGINT or SIGTERM raise SystemExit, so a campaign's `finally` stops the processes it
    started (a script started in the background ignores SIGINT, and SIGTERM's default
    ends Python without unwinding: its servers were left running)."""

    def _exit(signum, _frame) -> None:
        raise SystemExit(128 + signum)

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit)


def default_signals() -> None:
    # A script started in the background inherits SIGINT as ignored, and dagster's own
    # processes then never see Ctrl-C; restore the defaults in every child.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def spawn(
    name: str, argv: list[str], env: dict[str, str], logs: Path, cwd: Path = PROJECT_ROOT
) -> subprocess.Popen:
    logs.mkdir(parents=True, exist_ok=True)
    out = open(logs / f"{name}.log", "ab")  # noqa: SIM115 - lives as long as the child
    log.info("starting %s (log: %s)", name, logs / f"{name}.log")
    return subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdout=out,
        stderr=subprocess.STDOUT,
        preexec_fn=default_signals,
        start_new_session=True,  # Ctrl-C reaches only us; we stop children in order
    )


# The code server lives as long as the stack and reads footers and timelines on ten threads
# (gRPC, hudi-rs): glibc gives each thread an arena of its own, and pyarrow's default pool
# (mimalloc here) keeps freed pages for itself, so its RSS crept with nothing alive behind it
# (a soak: +48 MiB after malloc_trim over an hour while its Python objects stayed flat,
# docs/RELIABILITY.md). Two arenas and pyarrow on the system allocator; a value the user
# set wins. Its run workers (forked from it) inherit both.
CODE_SERVER_ALLOCATOR_ENV = {"MALLOC_ARENA_MAX": "2", "ARROW_DEFAULT_MEMORY_POOL": "system"}


def code_server_environment(env: dict[str, str]) -> dict[str, str]:
    return {**CODE_SERVER_ALLOCATOR_ENV, **env}


def stop_child(name: str, proc: subprocess.Popen, timeout: float) -> None:
    """SIGINT (a clean stop), then SIGTERM and SIGKILL to its process group if it hangs."""
    if proc.poll() is not None:
        return
    log.info("stopping %s", name)
    stop_process_group(proc, signal.SIGINT, timeout)


def kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM what is left of a child's process group (e.g. a code server it started)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)


def stream_args(stream: StreamConfig) -> list[str]:
    """The `freshness replay` flags that generate exactly `stream`."""
    args = [
        "--rate",
        str(stream.rate),
        "--seed",
        str(stream.seed),
        "--universe-size",
        str(stream.universe_size),
    ]
    if stream.bursty:
        args += [
            "--burst-every",
            str(stream.burst_every_s),
            "--burst-length",
            str(stream.burst_s),
            "--burst-factor",
            str(stream.burst_factor),
        ]
    if stream.spiky:
        args += ["--spike-symbols", str(stream.spike_symbols)]
    return args


@dataclass(frozen=True)
class StackConfig:
    """What to run. Paths default to the checkout's `.lakehouse` and `.dagster_home`."""

    stream: StreamConfig = field(default_factory=StreamConfig)  # generated stream, bursts
    speedup: float = 1.0
    malformed_rate: float = 0.0005
    commit_interval_s: float = 10.0
    replay_file: Path | None = None  # a recorded stream instead of the generator
    duration_s: float | None = None  # event-time seconds to replay (None: forever)
    spark_mode: str = "service"  # "service": one shared Spark Connect server; "local"
    # `dagster dev` (UI + daemon), or `dagster-daemon run` beside a code server of ours
    webserver: bool = True
    host: str = "127.0.0.1"
    port: int = 3000
    dagster_home: Path | None = None
    logs_dir: Path | None = None  # None: the settings' state folder's logs/
    # The children's variables beyond the settings' own (SPARK_LOCAL_IP, ...); a setting's
    # name here (FRESHNESS_POLICY, the lakehouse) changes the stack's settings for its run.
    env: dict[str, str] = field(default_factory=dict)
    # The market stream: the company master loaded, the stream replayed and ingested into
    # the raw tables. Off: a pipeline of only your own jobs over tables someone else
    # writes (the Spark service and Dagster alone).
    market: bool = True
    # The module Dagster loads: ours, or a peer's that replaces it (the plain Dagster peer)
    code_location: str = CODE_LOCATION
    # The replayed stream's event time: as recorded ("stream") or moved to the wall clock
    # ("wall", live data: what partitions by the clock need)
    event_clock: str = "stream"


def in_flight_filter(since: datetime):
    """Dagster's filter for the runs created since `since` that are starting, running or
    being canceled."""
    import dagster as dg

    return dg.RunsFilter(
        statuses=[
            dg.DagsterRunStatus.STARTING,
            dg.DagsterRunStatus.STARTED,
            dg.DagsterRunStatus.CANCELING,
        ],
        created_after=since,
    )


def pid_alive(pid: int) -> bool:
    """A live process (a zombie counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(") ", 1)[1][:1] not in ("Z", "X")
    except (OSError, IndexError):
        # A process reaped between the open and the read fails the read with ESRCH
        # (ProcessLookupError), not FileNotFoundError.
        return False


def run_worker_pid(instance, run_id: str) -> int | None:
    """The pid Dagster's run launcher recorded for a run's worker process."""
    import dagster as dg

    records = instance.get_records_for_run(
        run_id, of_type=dg.DagsterEventType.ENGINE_EVENT, limit=20
    ).records
    for record in records:
        data = record.event_log_entry.dagster_event.event_specific_data
        pid = getattr(data, "metadata", {}).get("pid") if data is not None else None
        if pid is not None:
            return int(getattr(pid, "value", pid))
    return None


def fail_runs_without_worker(instance, started_after: datetime) -> list[str]:
    """Marks failed the runs Dagster still shows as started whose worker process is gone.
    A run's status is read again once its worker is found gone: a worker that wrote its
    RUN_SUCCESS and exited between the listing and the check is not a lost run (the soak
    of 2026-11-25 22:06 saw a successful run marked failed that way)."""
    import dagster as dg

    events = []
    started = dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED], created_after=started_after)
    for run in instance.get_runs(started):
        pid = run_worker_pid(instance, run.run_id)
        if pid is None or pid_alive(pid):
            continue
        current = instance.get_run_by_id(run.run_id)
        if current is None or current.status != dg.DagsterRunStatus.STARTED:
            continue  # it ended on its own before its worker exited
        instance.report_run_failed(
            current, message=f"run worker (pid {pid}) is gone; marked failed to retry"
        )
        events.append(f"run {run.run_id} lost its worker (pid {pid}); marked failed")
    return events


def free_slots_of_ended_runs(instance) -> list[str]:
    """Frees the pool slots still claimed by runs that have ended. A run whose worker was
    killed cannot free its own; Dagster's run monitoring does it too, but only on its poll
    (dagster.yaml), and the next run of that asset waits until then."""
    events = []
    storage = instance.event_log_storage
    for pool in sorted(storage.get_concurrency_keys()):
        for slot in storage.get_concurrency_info(pool).claimed_slots:
            run = instance.get_run_by_id(slot.run_id)
            if run is None or run.is_finished:
                storage.free_concurrency_slots_for_run(slot.run_id)
                events.append(f"freed pool {pool} held by ended run {slot.run_id}")
    return events


def _argv(proc: subprocess.Popen) -> list[str]:
    """The argv a child was started with, to start it again (every child starts from a
    list)."""
    args = proc.args
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise TypeError(f"child {proc.pid} was not started from an argv list: {args!r}")
    return [os.fsdecode(a) if isinstance(a, bytes | os.PathLike) else str(a) for a in args]


class Stack:
    """One running system; `start()` returns once every child is up (or raises)."""

    def __init__(self, config: StackConfig, settings: Settings) -> None:
        # Every child's log; the config keeps it too, for those that read it there.
        self.logs_dir: Path = config.logs_dir or settings.state_dir / "logs"
        self.config = config = replace(config, logs_dir=self.logs_dir)
        # One Settings value for every child: the caller's, with the config's changes; it
        # gains the Spark service's and the broker's addresses as they start.
        self.settings = settings.changed({k: v for k, v in config.env.items() if is_setting(k)})
        self._extra_env = {k: v for k, v in config.env.items() if not is_setting(k)}
        home = config.dagster_home or Path(
            child_environment(extra=self._extra_env).get(
                "DAGSTER_HOME", PROJECT_ROOT / ".dagster_home"
            )
        )
        self.dagster_home = home.resolve()
        self._extra_env["DAGSTER_HOME"] = str(self.dagster_home)
        self.service: SparkService | None = None
        self.broker: KafkaBroker | None = None  # the local Kafka broker, when we start one
        self.children: list[tuple[str, subprocess.Popen, float]] = []
        self.restarts: dict[str, int] = {}
        self._instance = None  # the supervisor's Dagster instance, opened on first use
        self._next_orphan_check = 0.0
        self._log_offsets: dict[str, int] = {}
        self._code_socket: Path | None = None  # the code server's socket (daemon-only mode)
        self.paused: set[str] = set()  # children stopped on purpose (pause); left down
        self.started_at = datetime.now(UTC)

    # -- start ---------------------------------------------------------------------------

    def start(self) -> Stack:
        settings = self.settings
        # Every server the settings name (Spark master, Postgres) answers, or one error
        # naming each that does not, before anything is started or written.
        preflight(settings)
        for line in protections(settings):
            log.info("protection: %s", line)
        self.started_at = datetime.now(UTC)
        try:
            self._prepare_dagster_home(settings)
            # The Spark service's JVM, ingestion's (which loads the company master) and the
            # code server come up side by side; Dagster starts once all three are ready.
            self._launch_spark_service()
            if self.config.market:
                self._start_kafka_broker()
            self._start_children()
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def env(self) -> dict[str, str]:
        """The environment of the stack's children: its settings' variables, the config's
        other variables and DAGSTER_HOME (each child builds the same Settings from it)."""
        return child_environment(self.settings, extra=self._extra_env)

    @property
    def spark_url(self) -> str | None:
        return self.settings.spark_remote

    def _prepare_dagster_home(self, settings: Settings) -> None:
        if settings.postgres_url:
            # Storage in Postgres: the repo's instance settings plus the storage block.
            write_instance_yaml(
                self.dagster_home,
                settings.postgres_url,
                settings.scheduler.k,
                settings.postgres_params,
            )
        else:
            self.dagster_home.mkdir(parents=True, exist_ok=True)
            dagster_yaml = self.dagster_home / "dagster.yaml"
            if not dagster_yaml.exists():
                dagster_yaml.symlink_to(PROJECT_ROOT / "dagster.yaml")
        # The instance's storage is created here, once, before any child opens it: SQLite
        # storages created by two processes at once can each stamp a schema version, and
        # every later open then fails ("alembic_version has more than one head").
        self._instance = open_instance(self.dagster_home, settings)

    def _launch_spark_service(self) -> None:
        if self.settings.spark_remote:
            log.info("using the Spark service at %s", self.settings.spark_remote)
            return
        if self.config.spark_mode != "service":
            log.info("Spark service off: every run starts its own Spark")
            return
        settings = self.settings
        config = service_config(settings, self.logs_dir)
        log.info("starting the shared Spark service on %s", config.url)
        self.service = SparkService(config).launch()
        self.settings = settings.changed({"FRESHNESS_SPARK_REMOTE": config.url})

    def _await_spark_service(self) -> None:
        if self.service is None:
            return
        self.service.wait_ready()
        config = self.service.config
        # A hand `dagster asset materialize` with this DAGSTER_HOME uses it too.
        assert self.service.process is not None
        announce(
            self.dagster_home,
            ServiceAnnouncement(config.url, self.service.process.pid, self.settings.lakehouse_root),
        )

    @property
    def kafka_bootstrap(self) -> str | None:
        settings = self.settings
        return settings.kafka.bootstrap_servers if settings.source == "kafka" else None

    def _start_kafka_broker(self) -> None:
        """With the Kafka source and no FRESHNESS_KAFKA_BOOTSTRAP, a local broker: before
        the replayer and ingestion, stopped after them."""
        settings = self.settings
        if settings.source != "kafka":
            return
        if settings.kafka.bootstrap:
            from freshness_pipeline.runtime.kafka_broker import create_topics

            log.info("using the Kafka cluster at %s", settings.kafka.bootstrap)
            # Topics of your own Kafka are used as they are; missing ones are created.
            create_topics(
                settings.kafka.bootstrap,
                dict.fromkeys(settings.kafka.topics.values(), settings.kafka.partitions),
                client=settings.kafka.client,
            )
            return
        config = KafkaBrokerConfig.from_settings(settings.kafka, broker_state_dir(settings))
        log.info("starting the local Kafka broker on %s", config.bootstrap_servers)
        self.broker = KafkaBroker(config).start()
        self.settings = settings.changed({"FRESHNESS_KAFKA_BOOTSTRAP": config.bootstrap_servers})

    def _cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "freshness_pipeline.cli", *args]

    def _start_children(self) -> None:
        cfg = self.config
        replay = [
            "replay",
            "--speedup",
            str(cfg.speedup),
            "--malformed-rate",
            str(cfg.malformed_rate),
        ]
        if cfg.replay_file:
            replay += ["--file", str(cfg.replay_file)]
        else:
            replay += stream_args(cfg.stream)
        if cfg.duration_s is not None:
            replay += ["--duration", str(cfg.duration_s)]
        if cfg.event_clock != "stream":
            replay += ["--event-clock", cfg.event_clock]
        # Ingestion runs its own Spark driver (FRESHNESS_INGEST_SPARK=own: _child_env leaves
        # FRESHNESS_SPARK_REMOTE out of its environment), starting beside the service, or
        # commits through the service once it is up. Either way a commit is fenced by its
        # checkpoint, so a batch a killed ingestor left running in the service commits once.
        ingest = ["ingest", "--commit-interval", str(cfg.commit_interval_s)]
        ingest += ["--load-master", str(cfg.stream.universe_size)]
        if cfg.market and not self.settings.ingests_through_service:
            self._spawn("ingest", self._cli(*ingest), 120)
        self._replay_argv = self._cli(*replay)
        bin_dir = Path(sys.executable).parent
        workspace = str(PROJECT_ROOT / "workspace.yaml")
        if cfg.webserver:
            where = (
                ["-w", workspace]
                if cfg.code_location == CODE_LOCATION
                else ["-m", cfg.code_location, "-d", str(PROJECT_ROOT)]
            )
            dagster = [
                str(bin_dir / "dagster"),
                "dev",
                *where,
                "--host",
                cfg.host,
                "--port",
                str(cfg.port),
            ]
        else:
            daemon_workspace = self._start_code_server(bin_dir)
            dagster = [str(bin_dir / "dagster-daemon"), "run", "-w", str(daemon_workspace)]
        self._await_spark_service()
        if cfg.market and self.settings.ingests_through_service:
            self._spawn("ingest", self._cli(*ingest), 120)
        if cfg.market:
            # Dagster starts once the company master is in (its runs join it), and the
            # stream once ingestion's Spark is up, so landed files do not pile up behind a
            # starting JVM (the first commit would otherwise be a burst).
            self._wait_for_log("ingest", INGEST_READY, timeout_s=240)
        # Run from DAGSTER_HOME so dagster does not mistake the checkout's dagster.yaml for
        # a second instance config (the one in DAGSTER_HOME is a link to it).
        self._spawn("dagster", dagster, 60)  # cwd: DAGSTER_HOME (_child_cwd)
        if self._code_socket is not None:
            # Stopped after the daemon and the drain of its runs: the run workers are the
            # code server's children.
            self.children.append(self.children.pop(self._child_index("code-server")))
        if not cfg.market:
            return
        self._spawn("replay", self._replay_argv, 15)
        # stop order: the stream first, then ingestion, then Dagster
        self.children.insert(0, self.children.pop())

    def _start_code_server(self, bin_dir: Path) -> Path:
        """One code server for the stack's life, the daemon's workspace pointing at it; the
        workspace file is returned. Given workspace.yaml's module, `dagster-daemon run`
        starts a code server of its own and replaces it every minute (the soak saw a new
        one every 75 s, each loading the definitions again: seconds of CPU each time, and
        no long-lived process whose memory a soak could judge). `dagster dev` and a
        deployment keep one; so does the stack. A Unix socket: nothing listens on a port."""
        socket_dir = Path(tempfile.mkdtemp(prefix="freshness-code-"))
        self._code_socket = socket_dir / "grpc.sock"
        server = [
            str(bin_dir / "dagster"),
            "code-server",
            "start",
            "--socket",
            str(self._code_socket),
            "--module-name",
            self.config.code_location,
            "--working-directory",
            str(PROJECT_ROOT),
            "--location-name",
            self.config.code_location,
        ]
        self._spawn("code-server", server, 60)
        self._wait_for_code_server(bin_dir)
        workspace = self.dagster_home / "daemon-workspace.yaml"
        workspace.write_text(
            "# Written by the stack (stack.py): the daemon reaches the stack's code server.\n"
            "load_from:\n"
            "  - grpc_server:\n"
            f"      socket: {self._code_socket}\n"
            f"      location_name: {self.config.code_location}\n"
        )
        return workspace

    def _wait_for_code_server(self, bin_dir: Path) -> None:
        assert self._code_socket is not None
        check = [str(bin_dir / "dagster"), "api", "grpc-health-check", "--socket"]
        deadline = time.monotonic() + CODE_SERVER_READY_S
        proc = self.process("code-server")
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log_path = self.logs_dir / "code-server.log"
                raise RuntimeError(
                    f"code-server exited with code {proc.returncode}; see {log_path}"
                )
            if self._code_socket.exists():
                answer = subprocess.run(
                    [*check, str(self._code_socket)], capture_output=True, env=self.env
                )
                if answer.returncode == 0:
                    return
            time.sleep(1.0)
        raise RuntimeError(f"the code server did not answer within {CODE_SERVER_READY_S:.0f} s")

    def _child_index(self, name: str) -> int:
        return next(i for i, (n, _, _) in enumerate(self.children) if n == name)

    def _wait_for_log(self, name: str, marker: str, timeout_s: float) -> None:
        path = self.logs_dir / f"{name}.log"
        proc = self.process(name)
        offset = self._log_offsets.get(name, 0)  # logs append across runs
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if path.exists():
                with path.open("rb") as handle:
                    handle.seek(offset)  # only what this start of the child wrote
                    if marker.encode() in handle.read():
                        return
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with code {proc.returncode}; see {path}")
            time.sleep(0.5)
        raise RuntimeError(f"{name} did not get ready within {timeout_s:.0f} s; see {path}")

    def _spawn(self, name: str, argv: list[str], stop_timeout: float) -> None:
        self.children.append((name, self._launch(name, argv), stop_timeout))

    def _launch(self, name: str, argv: list[str]) -> subprocess.Popen:
        """Starts (or restarts) child `name`; its log is appended to, and readiness checks
        read only what this start writes."""
        log_path = self.logs_dir / f"{name}.log"
        self._log_offsets[name] = log_path.stat().st_size if log_path.exists() else 0
        return spawn(name, argv, self._child_env(name), self.logs_dir, self._child_cwd(name))

    # -- watch and stop --------------------------------------------------------------------

    def process(self, name: str) -> subprocess.Popen:
        return next(proc for n, proc, _ in self.children if n == name)

    def pause(self, name: str) -> None:
        """Stops child `name` cleanly and leaves it down until `resume` (an outage or a
        deploy of Dagster's daemon: no sensor tick, no dequeue; runs in flight, children of
        the code server, finish)."""
        _, proc, timeout = self.children[self._child_index(name)]
        self.paused.add(name)
        stop_child(name, proc, timeout)
        kill_group(proc)

    def resume(self, name: str) -> None:
        """Starts child `name` again, as it was first started."""
        index = self._child_index(name)
        _, proc, timeout = self.children[index]
        self.children[index] = (name, self._launch(name, _argv(proc)), timeout)
        self.paused.discard(name)

    def exited(self) -> list[tuple[str, int]]:
        """Children that have exited, with their exit codes (the replayer may, on purpose;
        a paused child is not among them)."""
        gone = [
            (name, proc.returncode)
            for name, proc, _ in self.children
            if proc.poll() is not None and name not in self.paused
        ]
        if self.service and self.service.process and self.service.process.poll() is not None:
            gone.append(("spark-service", self.service.process.returncode))
        if self.broker and self.broker.process and self.broker.process.poll() is not None:
            gone.append(("kafka-broker", self.broker.process.returncode))
        return gone

    def pids(self) -> dict[str, int]:
        pids = {name: proc.pid for name, proc, _ in self.children}
        if self.service and self.service.pid:
            pids["spark-service"] = self.service.pid
        if self.broker and self.broker.pid:
            pids["kafka-broker"] = self.broker.pid
        return pids

    # -- supervise ---------------------------------------------------------------------------

    def supervise(self) -> list[str]:
        """One supervision pass (the demo calls it every second): a dead Spark service,
        ingestion or Dagster is started again, and a run whose worker process died is
        marked failed so its pool slot frees and the sensor retries it. Returns what it
        did, for the log."""
        events: list[str] = []
        if self.service and self.service.process and self.service.process.poll() is not None:
            code = self.service.process.returncode
            try:
                self.service.start()
                self.restarts["spark-service"] = self.restarts.get("spark-service", 0) + 1
                events.append(f"Spark service exited ({code}); restarted at {self.service.url}")
            except Exception as exc:  # tried again on the next pass
                events.append(f"Spark service exited ({code}); restart failed: {exc}")
        if self.broker and self.broker.process and self.broker.process.poll() is not None:
            code = self.broker.process.returncode
            try:
                self.broker.start()  # same port and log dir: offsets and topics survive
                self.restarts["kafka-broker"] = self.restarts.get("kafka-broker", 0) + 1
                events.append(f"Kafka broker exited ({code}); restarted")
            except Exception as exc:  # tried again on the next pass
                events.append(f"Kafka broker exited ({code}); restart failed: {exc}")
        for index, (name, proc, timeout) in enumerate(self.children):
            if proc.poll() is None or name == "replay" or name in self.paused:
                continue
            code = proc.returncode
            kill_group(proc)  # whatever it left behind (dagster dev's daemon, webserver)
            if name == "code-server" and self._code_socket is not None:
                self._code_socket.unlink(missing_ok=True)  # the dead server's socket file
            restarted = self._launch(name, _argv(proc))
            self.children[index] = (name, restarted, timeout)
            self.restarts[name] = self.restarts.get(name, 0) + 1
            events.append(f"{name} exited ({code}); restarted (pid {restarted.pid})")
        events += self.fail_orphaned_runs()
        return events

    def _child_env(self, name: str) -> dict[str, str]:
        if name == "ingest" and not self.settings.ingests_through_service:
            own_driver = self.settings.changed({"FRESHNESS_SPARK_REMOTE": None})
            return child_environment(own_driver, extra=self._extra_env)
        if name == "code-server":
            return code_server_environment(self.env)
        return self.env

    def _child_cwd(self, name: str) -> Path:
        return self.dagster_home if name in ("dagster", "code-server") else PROJECT_ROOT

    def fail_orphaned_runs(self) -> list[str]:
        """Runs of this stack that Dagster still shows as started though their worker
        process is gone (killed): the default run launcher does not watch its workers."""

        events: list[str] = []
        # Every few seconds, on one instance kept open: opening one costs more than a check.
        if time.monotonic() < self._next_orphan_check:
            return events
        self._next_orphan_check = time.monotonic() + ORPHAN_CHECK_S
        if not (self.dagster_home / "dagster.yaml").exists():
            return events
        if self._instance is None:
            self._instance = open_instance(self.dagster_home, self.settings)
        instance = self._instance
        events += fail_runs_without_worker(instance, self.started_at)
        events += free_slots_of_ended_runs(instance)
        return events

    def stop(self, drain_timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        if self._instance is not None:
            self._instance.dispose()
            self._instance = None
        try:
            for name, proc, timeout in self.children:
                stop_child(name, proc, timeout)
                if name == "dagster":
                    # The daemon is gone, so no tick or dequeue launches anything new; the
                    # code server outlives it until its runs end. Let them end before the
                    # Spark service stops, or they fail on a stopped SparkContext.
                    try:
                        self.drain_runs(drain_timeout_s)
                    finally:
                        kill_group(proc)
                elif name == "code-server":
                    # Runs still going after the drain are the code server's fork-server
                    # children, in its process group; they ignore the SIGINT its leader
                    # obeyed and would run on into whatever starts next.
                    kill_group(proc)
        finally:
            # Whatever failed above (a Dagster instance that cannot be opened), the
            # children left and the Spark service are still stopped.
            for name, proc, timeout in self.children:
                stop_child(name, proc, timeout)
            if self.broker:
                log.info("stopping the Kafka broker")
                self.broker.stop()
            if self.service:
                log.info("stopping the Spark service")
                if self.service.process is not None:
                    withdraw(self.dagster_home, self.service.process.pid)
                self.service.stop()
            if self._code_socket is not None:
                shutil.rmtree(self._code_socket.parent, ignore_errors=True)

    def drain_runs(self, timeout_s: float) -> None:
        """Cancel this stack's queued runs (nothing would launch them) and wait for its
        started ones. Runs from before this start are left alone: a run a crashed earlier
        session left as STARTED would never finish."""
        import dagster as dg

        def ours(*statuses: dg.DagsterRunStatus) -> dg.RunsFilter:
            return dg.RunsFilter(statuses=list(statuses), created_after=self.started_at)

        active = in_flight_filter(self.started_at)
        if not (self.dagster_home / "dagster.yaml").exists():
            return
        with open_instance(self.dagster_home, self.settings) as instance:
            for run in instance.get_runs(ours(dg.DagsterRunStatus.QUEUED)):
                instance.report_run_canceled(
                    run, message="canceled at stop: the stack stopped before the run launched"
                )
            deadline = time.monotonic() + timeout_s
            waiting = instance.get_runs(active)
            if waiting:
                log.info(
                    "waiting up to %.0f s for %d run(s) in flight to finish",
                    timeout_s,
                    len(waiting),
                )
            while waiting and time.monotonic() < deadline:
                time.sleep(1)
                # A run whose worker was killed would stay STARTED until the deadline.
                fail_runs_without_worker(instance, self.started_at)
                waiting = instance.get_runs(active)
            if waiting:
                log.warning(
                    "%d run(s) still in flight after %.0f s; they will be cut off: %s",
                    len(waiting),
                    timeout_s,
                    [r.run_id for r in waiting],
                )

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
