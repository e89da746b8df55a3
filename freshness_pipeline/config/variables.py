"""Every `FRESHNESS_*` variable: the table of settings (defaults, meanings, what each
accepts), the names retired or renamed, and docs/SETTINGS.md's table generated from it.

    python -m freshness_pipeline.config.variables     # the table, as docs/SETTINGS.md has it
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from freshness_pipeline.config.parsing import (
    CLUSTER_LAKEHOUSES,
    INGEST_SPARKS,
    POSTGRES_SCHEME,
    PROFILES,
    RUN_STARTS,
    SOURCES,
    SPARK_MODES,
    SSLMODES,
    Setting,
    SettingsError,
    parse_bool,
    parse_bootstrap,
    parse_choice,
    parse_clustered_tables,
    parse_cost_prior,
    parse_cron_or_off,
    parse_endpoint,
    parse_existing_file,
    parse_folder,
    parse_fraction,
    parse_int_at_least,
    parse_jobs,
    parse_jvm_size,
    parse_kafka_client_file,
    parse_port,
    parse_postgres_url,
    parse_seconds_or_off,
    parse_spark_master,
    parse_text,
    parse_topic,
)
from freshness_pipeline.config.scheduler_settings import (
    AUTOMATIONS,
    CHAIN_MODES,
    DEFAULT_INTERVAL_S,
    DEFAULT_MAX_WAIT_S,
    MIN_TICK_S,
    TMIN_MODES,
)
from freshness_pipeline.hudi.lakehouse import Lakehouse
from freshness_pipeline.scheduling.budget import LAUNCH_RULES
from freshness_pipeline.scheduling.cost_model import COST_MODES
from freshness_pipeline.scheduling.planner import POLICIES
from freshness_pipeline.scheduling.staleness_target import MIN_WINDOW_S

log = logging.getLogger(__name__)


SETTINGS: tuple[Setting, ...] = (
    Setting("FRESHNESS_LAKEHOUSE", "<checkout>/.lakehouse/tables",
            "root of the Hudi tables", "a folder, file://..., or s3://bucket/prefix",
            Lakehouse.parse),
    Setting("FRESHNESS_LANDING", "<checkout>/.lakehouse/landing",
            "landing folder shared by the replayer and ingestion", "a folder",
            parse_folder),
    Setting("FRESHNESS_STATE_DIR", "<checkout>/.lakehouse",
            "folder of the project's own files beside the tables: the processes' logs, the "
            "Spark service's working folder (its Connect artifacts), experiment and chaos "
            "runs unless told where", "a folder", parse_folder),
    Setting("FRESHNESS_JARS_DIR", "<checkout>/.cache/jars",
            "folder of the Hudi bundle, the Spark Connect jar and our Hudi guard jar",
            "a folder", parse_folder),
    Setting("FRESHNESS_PROFILE", "local",
            "`local`: embedded defaults; `cluster`: the demo also starts Postgres, a Spark "
            "standalone master + worker (and the object store) and points everything at them",
            " or ".join(PROFILES), parse_choice(PROFILES)),
    Setting("FRESHNESS_CLUSTER_SECURE", "false",
            "the cluster profile's servers as a firm runs them: a CA made for them, Postgres "
            "over TLS only, the object store over HTTPS, Spark with spark.authenticate, Kafka "
            "over SASL_SSL (docs/DEPLOY.md, connecting securely)", "true or false", parse_bool),
    Setting("FRESHNESS_CLUSTER_LAKEHOUSE", "object_store",
            "where the cluster profile keeps a lakehouse FRESHNESS_LAKEHOUSE leaves local: "
            "`folder` (that folder) or `object_store` (the local S3 store it starts; "
            "s3://lakehouse/tables)", " or ".join(CLUSTER_LAKEHOUSES),
            parse_choice(CLUSTER_LAKEHOUSES)),
    Setting("FRESHNESS_SPARK_MASTER", "local[*]",
            "Spark master of the Spark service and of a process's own Spark (ingestion, "
            "`--spark local` runs); the cluster profile sets its own master's URL",
            "local[N], local[*], spark://host:port, yarn, k8s://...", parse_spark_master),
    Setting("FRESHNESS_SPARK_DRIVER_HOST", None,
            "address a driver binds and executors call back on (`spark.driver.host` and "
            "`bindAddress`); unset: 127.0.0.1 for a local master, Spark's choice otherwise",
            "a host name or IP address", parse_text),
    Setting("FRESHNESS_SPARK_AUTH_SECRET", None,
            "shared secret of a Spark cluster run with `spark.authenticate` (the master, its "
            "workers, our drivers and executors prove they hold it); reaches the JVMs "
            "through their environment, never a command line", "a secret", parse_text,
            secret=True),
    Setting("FRESHNESS_SPARK_REMOTE_CA", None,
            "CA (PEM) the Spark service proxy's certificate chains to, for a run reaching the "
            "service through it (`freshness connect-proxy`; with _CERT and _KEY)", "a file",
            parse_existing_file),
    Setting("FRESHNESS_SPARK_REMOTE_CERT", None,
            "this host's client certificate (PEM) for the Spark service proxy", "a file",
            parse_existing_file),
    Setting("FRESHNESS_SPARK_REMOTE_KEY", None,
            "its private key (PEM, readable by its owner only)", "a file", parse_existing_file),
    Setting("FRESHNESS_SPARK_SERVICE_OPEN", "false",
            "let the Spark service bind a non-loopback FRESHNESS_SPARK_SERVICE_BIND without "
            "the proxy: Spark Connect has no authentication, so only where a network "
            "control (a Kubernetes NetworkPolicy, a security group) already keeps strangers "
            "out", "true or false", parse_bool),
    Setting("FRESHNESS_SPARK_CORES_MAX", "2",
            "cores one application (the Spark service, ingestion) takes on a `spark://` "
            "master (`spark.cores.max`)", "an integer of at least 1", parse_int_at_least(1)),
    Setting("FRESHNESS_SPARK_EXECUTOR_MEMORY", "2g",
            "executor memory of an application on a `spark://` master",
            "a JVM size such as 2g", parse_jvm_size),
    Setting("FRESHNESS_SPARK_REMOTE", None,
            "Spark Connect URL of your own Connect server; runs use it and the demo starts "
            "none", "sc://host:port", parse_text),
    Setting("FRESHNESS_SPARK_MODE", "service",
            "`service`: the demo starts a local shared Spark service; `local`: every run "
            "starts its own Spark", " or ".join(SPARK_MODES), parse_choice(SPARK_MODES)),
    Setting("FRESHNESS_INGEST_SPARK", "own",
            "`own`: ingestion runs its own Spark driver (a second JVM); `service`: it commits "
            "through the Spark service the runs use (FRESHNESS_SPARK_REMOTE or the stack's), "
            "one JVM for both; each commit is fenced by its checkpoint either way",
            " or ".join(INGEST_SPARKS), parse_choice(INGEST_SPARKS)),
    Setting("FRESHNESS_INGEST_JIT", "c1",
            "the JIT of ingestion's own Spark driver: `c1` (-XX:TieredStopAtLevel=1: a raw "
            "commit of a few thousand rows runs about as fast in C1's code, and C2's "
            "compiles were most of the driver's CPU; docs/BENCHMARKS.md); `tiered`: the "
            "JVM's own (C1, then C2 for hot code)", "c1 or tiered",
            parse_choice(("c1", "tiered"))),
    Setting("FRESHNESS_INGEST_WRITE", "bulk_insert",
            "the Hudi operation of a raw commit that adds files of its own (raw packing "
            "off): `bulk_insert` (Hudi's row writer, one new file per partition a commit: no "
            "workload profile, no Avro records; 10 Spark tasks a commit against 42, ingestion's "
            "driver 0.7 of the insert's CPU, docs/BENCHMARKS.md) or `insert`; with "
            "FRESHNESS_RAW_PACKING a commit rewrites small files, which only `insert` does",
            "bulk_insert or insert",
            parse_choice(("insert", "bulk_insert"))),
    Setting("FRESHNESS_RUN_START", "forkserver",
            "how a code server starts a run's process: `forkserver`: a fork of one process "
            "that imported the definitions once (`run_start.py`); `spawn`: Dagster's own, a "
            "new Python that imports Dagster, PySpark and the definitions per run",
            " or ".join(RUN_STARTS), parse_choice(RUN_STARTS)),
    Setting("FRESHNESS_HANDOFF", "false",
            "`true`: in a run of several tables (a chain), a step reads its parent's new rows "
            "from the parent's result kept in the run's session instead of from Hudi, where "
            "the two are equal (execution/handoff.py); off by default: on local disk the Hudi read "
            "is the cheaper (docs/BENCHMARKS.md, rows handed on in memory)",
            "true or false", parse_bool),
    Setting("FRESHNESS_SPARK_SERVICE_PORT", "15002", "port of the local Spark service",
            "a port number 1-65535", parse_int_at_least(1)),
    Setting("FRESHNESS_SPARK_SERVICE_BIND", "127.0.0.1",
            "address the local Spark service's Connect port listens on; 0.0.0.0 serves "
            "other machines too (anyone who reaches it can run SQL)", "an IP address", parse_text),
    Setting("FRESHNESS_SPARK_SERVICE_MEMORY", "4g", "driver memory of the local Spark service",
            "a JVM size such as 4g", parse_jvm_size),
    Setting("FRESHNESS_SPARK_JAVA_OPTIONS", None,
            "extra JVM options for the Spark drivers the project starts (the service, "
            "ingestion's, a run's own), after the project's own (FRESHNESS_SPARK_GC, "
            "FRESHNESS_SPARK_COMPILE_SCALING), so a -XX setting here wins; e.g. JIT or GC "
            "settings to measure (`freshness lab fresh-cost`)", "JVM options", parse_text),
    Setting("FRESHNESS_SPARK_GC", "parallel",
            "the collector of the Spark drivers the project starts: `parallel` "
            "(-XX:+UseParallelGC: no concurrent marking threads beside the steps on a small "
            "machine; docs/BENCHMARKS.md); `java`: the JVM's default (G1). A collector named "
            "in FRESHNESS_SPARK_JAVA_OPTIONS needs `java` here: the JVM refuses two",
            "parallel or java", parse_choice(("parallel", "java"))),
    Setting("FRESHNESS_SPARK_COMPILE_SCALING", "3",
            "the JIT's compile thresholds of the Spark drivers the project starts, times this "
            "(-XX:CompileThresholdScaling): at 3 a method is compiled once it is three times "
            "as hot, and a young JVM's compiler threads, most of its CPU in its first "
            "minutes, compile fewer (docs/BENCHMARKS.md); 1: the JVM's own thresholds",
            "a whole number from 1", parse_int_at_least(1)),
    Setting("FRESHNESS_SPARK_CODEGEN", "true",
            "`false`: the Spark drivers the project starts evaluate queries interpreted "
            "(whole-stage code generation and expression compilation off): no Java compiled "
            "per query, nor JIT-compiled after it (docs/BENCHMARKS.md); `true`: Spark's "
            "generated code, its classes kept for 2,000 queries' stages", "true or false",
            parse_bool),
    Setting("FRESHNESS_SPARK_KRYO_POOL", "shared",
            "`shared`: the Spark drivers the project starts keep one pool of Kryo "
            "serializers per JVM (io.freshness.spark.SharedPoolKryoSerializer); `spark`: "
            "Spark's own, a pool per task, so every shuffle task builds its Kryo instances "
            "again (docs/BENCHMARKS.md)", "shared or spark",
            parse_choice(("shared", "spark"))),
    Setting("FRESHNESS_SPARK_LOCAL_FS", "java",
            "how the Spark drivers the project starts read and set local files' permissions: "
            "`java` (io.freshness.hadoop.NioLocalFileSystem, a system call); `hadoop`: "
            "Hadoop's own, which without its native library starts a chmod or ls process "
            "per file (docs/BENCHMARKS.md)", "java or hadoop",
            parse_choice(("java", "hadoop"))),
    Setting("FRESHNESS_SPARK_CONF_SOURCES", "drop",
            "`drop`: the Spark drivers the project starts write Hadoop configurations for "
            "tasks without each entry's source files (a Java agent, "
            "freshness_pipeline/jvm/agent/HadoopConfSources.java: Hadoop gzips every "
            "source name, about a thousand streams for each task Hudi runs); `hadoop`: "
            "Hadoop's own (docs/BENCHMARKS.md)", "drop or hadoop",
            parse_choice(("drop", "hadoop"))),
    Setting("FRESHNESS_SPARK_SERVICE_SHARED_CODE", "false",
            "`true`: the Spark service's Connect sessions that bring no code of their own share "
            "one class loader, so Spark's generated classes are compiled once, not again in "
            "every run (Spark 3.5's Connect server gives each session class loaders of its "
            "own, and Spark's code cache is keyed by them; a Java agent, jvm/agent, routes "
            "that; docs/BENCHMARKS.md); `false`: Spark's own behaviour",
            "true or false", parse_bool),
    Setting("FRESHNESS_POSTGRES_URL", None,
            "Dagster's storage (runs, event log, schedules) in this Postgres database; unset: "
            "SQLite in DAGSTER_HOME (the cluster profile starts a local Postgres)",
            f"{POSTGRES_SCHEME}://user@host:port/database", parse_postgres_url,
            secret=True),  # a bad one may hold a password: the error never quotes it
    Setting("FRESHNESS_POSTGRES_PASSWORD", None,
            "password of FRESHNESS_POSTGRES_URL's user (Dagster reads it from this variable; "
            "never written to a file)", "text", parse_text, secret=True),
    Setting("FRESHNESS_POSTGRES_SSLMODE", None,
            "libpq's sslmode for Dagster's Postgres and our own checks: `verify-full` with "
            "your CA (FRESHNESS_POSTGRES_SSLROOTCERT) checks the server's certificate and "
            "name; unset: libpq's default (`prefer`, which a man in the middle can downgrade)",
            " or ".join(SSLMODES), parse_choice(SSLMODES)),
    Setting("FRESHNESS_POSTGRES_SSLROOTCERT", None,
            "CA certificate (PEM) the Postgres server's certificate must chain to "
            "(`verify-ca`, `verify-full`)", "a file", parse_existing_file),
    Setting("FRESHNESS_POLICY", "pmb",
            "scheduling policy: `pmb`, `max_benefit` (all pending input), `random` (seeded), "
            "and the experiment's variants", ", ".join(POLICIES), parse_choice(POLICIES)),
    Setting("FRESHNESS_K", "3",
            "concurrent jobs; keep `max_concurrent_runs` in `dagster.yaml` equal",
            "an integer of at least 1", parse_int_at_least(1)),
    Setting("FRESHNESS_RUNS_AT_ONCE", None,
            "the most runs the sensor keeps in flight, of the K the run queue allows: where "
            "the Spark backend runs one job at full speed, runs beside it only share it and "
            "each pays its fixed cost, while one at a time in eta order commits each table "
            "soonest (Smith's rule for weighted completion time); unset: K",
            "an integer of at least 1", parse_int_at_least(1)),
    Setting("FRESHNESS_LAUNCH_RULE", "slots",
            "when the sensor launches a planned run: `slots`, into every free slot of K (the "
            "published rule); `budget`, only when its earlier commits save more staleness "
            "than it costs the runs in flight on a machine shared as the steps measured it "
            "(METHOD 10, scheduling/budget.py; the tick names each run it held back); `batch`, "
            "the same counting the larger batch a run that waits would take (its steps' fixed "
            "work paid once)",
            " or ".join(LAUNCH_RULES), parse_choice(LAUNCH_RULES)),
    Setting("FRESHNESS_TICK_S", "10",
            "sensor interval in seconds (Dagster's sensor daemon loops every 5 s at most)",
            f"an integer of at least {MIN_TICK_S}", parse_int_at_least(MIN_TICK_S)),
    Setting("FRESHNESS_TMIN_MODE", "pending",
            "`pending`: per-file pending arrival range from commit metadata; `footer`: the "
            "published whole-file footer min/max", " or ".join(TMIN_MODES),
            parse_choice(TMIN_MODES)),
    Setting("FRESHNESS_COST_MODE", "three_term",
            "`three_term`: E = a + b*bytes + c*files; `two_term`: the published a + b*bytes",
            " or ".join(COST_MODES), parse_choice(tuple(COST_MODES))),
    Setting("FRESHNESS_SEED", "0", "seed of the `random` policy", "an integer", int),
    Setting("FRESHNESS_MAX_WAIT_S", str(DEFAULT_MAX_WAIT_S),
            "aging: a runnable job that has waited longer than this many seconds (since its "
            "pending input committed or its last run, whichever is later) takes the next "
            "free slot ahead of the policy's order; `off`: the policy's order alone (the "
            "published method)",
            "an integer of at least 1, or off", parse_seconds_or_off),
    Setting("FRESHNESS_FIRST_RUNS_FIRST", "true",
            "a runnable job whose table was never materialized takes the next free slot "
            "ahead of the policy's order (every table exists within a few runs of the "
            "start; costs P where runs take minutes: docs/BENCHMARKS.md, Aging)",
            "true or false", parse_bool),
    Setting("FRESHNESS_CHAINS", "planned",
            "`planned`: the sensor plans whole runs (METHOD 8): a job with its policy's "
            "choice, the other runnable jobs its descendants read, and the descendants "
            "worth refreshing in the same Dagster run (one launch, steps in dependency "
            "order, each committing its own table), ranked by the staleness they remove "
            "per second; `off`: one table per run, as published",
            " or ".join(CHAIN_MODES), parse_choice(CHAIN_MODES)),
    Setting("FRESHNESS_STEPS_AT_ONCE", "1",
            "steps a chained sensor run executes at once: above 1, a run whose chain has at "
            "least three steps that can go side by side (the views below one table) runs "
            "them in processes of their own, forked from a server that imported the "
            "definitions once (Dagster's multiprocess executor), each with its own Spark "
            "session; 1: one after another in the run's process (every other run, the "
            "peers' and a hand materialization, always does). For a backend with cores to "
            "spare: on 2 cores a step is CPU-bound and three at once save about 10 % of a "
            "wide chain's time (docs/BENCHMARKS.md)",
            "an integer of at least 1", parse_int_at_least(1)),
    Setting("FRESHNESS_COST_PRIOR", None,
            "a JSON file of cost coefficients the sensor starts from until a job has run a "
            "few times (per job a_s, b_s_per_mib, c_s_per_file, and run_cost_s, the fixed "
            "cost of a run): `freshness experiment` writes one from its calibration run; "
            "unset: the built-in guess (20 s a step, 3 s a run)",
            "a file", parse_cost_prior),
    Setting("FRESHNESS_STALENESS_TARGET_S", "300",
            "how stale (now minus the newest arrival a table reflects, METHOD 1) a derived "
            "table may get: each asset's Dagster freshness policy fails past it, and the "
            "sensor's tick names the tables past it",
            f"an integer of at least {MIN_WINDOW_S} (Dagster's shortest window)",
            parse_int_at_least(MIN_WINDOW_S)),
    Setting("FRESHNESS_EXACTNESS_SAMPLE", "5",
            "keys each table's exactness check samples and recomputes with the batch oracle "
            "at the table's watermark (0: no exactness checks, as the experiment runs)",
            "a whole number from 0", parse_int_at_least(0)),
    Setting("FRESHNESS_EXACTNESS_SCHEDULE", "off",
            "a cron expression (UTC) on which every table's exactness check runs, in runs of "
            "its own; `off`: the schedule is there, stopped, every hour once started in the "
            "UI. A hand run of a table also runs its check; the sensor's runs do not",
            "a cron expression of five fields, or off", parse_cron_or_off),
    Setting("FRESHNESS_STALENESS_WARN_FRACTION", "0.5",
            "the freshness policy warns past this fraction of the target (0: no warning)",
            f"a number from 0 to below 1, giving a warn window of at least {MIN_WINDOW_S} s",
            parse_fraction),
    Setting("FRESHNESS_AUTOMATION", "freshness_sensor",
            "who launches the six jobs: `freshness_sensor` (ours, by FRESHNESS_POLICY), "
            "`dagster_eager` (Dagster's `AutomationCondition.eager()`, evaluated by its daemon) "
            "or `interval` (all six every FRESHNESS_INTERVAL_S)", ", ".join(AUTOMATIONS),
            parse_choice(AUTOMATIONS)),
    Setting("FRESHNESS_INTERVAL_S", str(DEFAULT_INTERVAL_S),
            "period of the `interval` automation in seconds (a schedule when it is whole "
            "minutes dividing an hour, else a fixed-interval sensor)",
            f"an integer of at least {MIN_TICK_S}", parse_int_at_least(MIN_TICK_S)),
    Setting("FRESHNESS_JOBS", None,
            "folder of your own job declarations, one SQL file each (docs/JOBS.md), or "
            "several separated by `:` (one pipeline beside another); unset: the bundled "
            "market jobs in jobs_sql/", "folders", parse_jobs),
    Setting("FRESHNESS_LAYOUT", None,
            "which of its declared `layouts` each job's table takes (docs/JOBS.md); "
            "`published`: the bundled jobs' tables partitioned by the symbol's first letter, "
            "as in the thesis (its reproductions run with it); unset: each declaration's own "
            "layout", "a layout name", parse_text),
    Setting("FRESHNESS_INPUTS", None,
            "TOML file declaring input tables written by others (docs/USER-GUIDE.md: your "
            "own tables and topics); unset: both raw tables are ours", "a file", parse_folder),
    Setting("FRESHNESS_SOURCE", "landing",
            "where the stream enters: `landing` (JSON-lines files in FRESHNESS_LANDING) or "
            "`kafka` (the topics below); the replayer writes there and ingestion reads there",
            " or ".join(SOURCES), parse_choice(SOURCES)),
    Setting("FRESHNESS_KAFKA_BOOTSTRAP", None,
            "bootstrap servers of your own Kafka; unset: the demo starts a local broker on "
            "FRESHNESS_KAFKA_BROKER_PORT and uses it", "host:port[,host:port...]", parse_bootstrap),
    Setting("FRESHNESS_KAFKA_BROKER_PORT", "9092",
            "port of the local Kafka broker (127.0.0.1) the demo starts", "a port number 1-65535",
            parse_port),
    Setting("FRESHNESS_KAFKA_JARS_DIR", "<checkout>/.cache/kafka",
            "folder of the Kafka broker's jars (`make setup` fetches them)", "a folder",
            parse_folder),
    Setting("FRESHNESS_KAFKA_PRICE_TOPIC", "prices", "topic of price-level updates (-> price_raw)",
            "a Kafka topic name", parse_topic),
    Setting("FRESHNESS_KAFKA_TRADE_TOPIC", "trades", "topic of trades (-> trade_raw)",
            "a Kafka topic name", parse_topic),
    Setting("FRESHNESS_KAFKA_PARTITIONS", "4",
            "partitions of each topic the local broker creates (your own topics keep theirs)",
            "an integer of at least 1", parse_int_at_least(1)),
    Setting("FRESHNESS_KAFKA_GROUP", "freshness-ingest",
            "client group id of ingestion; offsets are never committed to it (the Hudi commit "
            "holds them)", "a group id", parse_text),
    Setting("FRESHNESS_KAFKA_CONFIG", None,
            "librdkafka properties file of every Kafka client of ours (ingestion, replayer, "
            "broker admin): `security.protocol`, `sasl.*`, `ssl.*` for SASL_SSL or mutual TLS "
            "(docs/DEPLOY.md, Kafka); a secret in it only when the file is mode 600",
            "a file of key=value lines", parse_kafka_client_file),
    Setting("FRESHNESS_KAFKA_SASL_PASSWORD", None,
            "SASL password of the Kafka client (`sasl.password`; from a secret, never a "
            "command line)", "a password", parse_text, secret=True),
    Setting("FRESHNESS_S3_ENDPOINT", None,
            "S3 API endpoint of an `s3://` lakehouse (unset: AWS S3 in the region)",
            "http://host:port or https://host", parse_endpoint),
    Setting("FRESHNESS_S3_REGION", "us-east-1", "region of an `s3://` lakehouse's bucket",
            "an AWS region name", parse_text),
    Setting("FRESHNESS_S3_CA_BUNDLE", None,
            "CA certificate(s) (PEM) an `https://` FRESHNESS_S3_ENDPOINT's certificate chains to, "
            "when your firm's CA signs it: trusted beside the public CAs by every client "
            "(pyarrow, hudi-rs, the JVMs' s3a)", "a file", parse_existing_file),
    Setting("FRESHNESS_S3_PATH_STYLE", "false",
            "path-style requests (`endpoint/bucket/key`), as most S3-compatible stores want",
            "true or false", parse_bool),
    Setting("AWS_ACCESS_KEY_ID", None,
            "access key of an `s3://` lakehouse (unset: the standard AWS chain: profile, "
            "role); never written to logs, run config, tags or metadata", "a key id", parse_text,
            secret=True),
    Setting("AWS_SECRET_ACCESS_KEY", None, "its secret key (never printed)", "a secret key",
            parse_text, secret=True),
    Setting("AWS_SESSION_TOKEN", None, "session token of temporary credentials (optional)",
            "a token", parse_text, secret=True),
    Setting("FRESHNESS_LOCK_DIR", None,
            "folder of the writers' table locks, shared by every writer (unset: each table's "
            "`.hoodie` for a local lakehouse, `<checkout>/.lakehouse/locks` for `s3://`)",
            "a folder every writer's driver sees", parse_folder),
    Setting("FRESHNESS_CLUSTERING_TABLES", "price_raw,trade_raw",
            "tables the clustering sensor keeps in few, time-tight files "
            "(docs/USER-GUIDE.md: clustering); `none`: off. A job table is clustered only "
            "while no run of it is active",
            "`none` or a comma list of raw and job table names", parse_clustered_tables),
    Setting("FRESHNESS_CLUSTERING_MIN_FILES", "260",
            "a clustering run is launched when it removes at least this many files (260: "
            "about ten raw commits, 26 partitions each; each run costs a Spark job)",
            "an integer of at least 1", parse_int_at_least(1)),
    Setting("FRESHNESS_CLUSTERING_SMALL_FILE_MB", "64",
            "files below this size (MiB) are merged; larger ones are left alone",
            "an integer of at least 1", parse_int_at_least(1)),
    Setting("FRESHNESS_CLUSTERING_TARGET_FILE_MB", "128",
            "a merged group holds at most this much (MiB): one output file",
            "an integer at least FRESHNESS_CLUSTERING_SMALL_FILE_MB", parse_int_at_least(1)),
    Setting("FRESHNESS_CLUSTERING_MAX_SPAN_S", "300",
            "a merged file never spans more than this many seconds of arrival_ts",
            "an integer of at least 1", parse_int_at_least(1)),
    Setting("FRESHNESS_CLUSTERING_TICK_S", "30",
            "interval of the clustering sensor in seconds",
            f"an integer of at least {MIN_TICK_S}", parse_int_at_least(MIN_TICK_S)),
    Setting("FRESHNESS_RAW_PACKING", "false",
            "ingestion packs new rows into the raw tables' small files (Hudi's copy-on-write "
            "small-file handling: each commit rewrites a partition's file with its new rows), "
            "the regime of the published experiment; off, each commit writes new files. On "
            "needs FRESHNESS_CLUSTERING_TABLES without a raw table",
            "true or false", parse_bool),
    Setting("FRESHNESS_FAULTS_DIR", None,
            "fault injection for tests and `make chaos` (`faults.py`); unset: off", "a folder",
            parse_folder),
    Setting("FRESHNESS_MEMORY_PROBE", None,
            "a diagnostic for soaks: a code server appends its memory (RSS before and after "
            "malloc_trim, tracemalloc's grown sites, objects by type) to this file as JSON "
            "lines (`memory_probe.py`); unset: off", "a file", parse_folder),
    Setting("FRESHNESS_MEMORY_PROBE_S", "60",
            "interval of the memory probe in seconds", "an integer of at least 5",
            parse_int_at_least(5)),
    Setting("FRESHNESS_MEMORY_PROBE_FRAMES", "6",
            "call-path depth the memory probe's tracemalloc keeps; 0: no tracemalloc (RSS, "
            "malloc_trim and objects by type only, without slowing every allocation)",
            "an integer of at least 0", parse_int_at_least(0)),
)  # fmt: skip
BY_ENV = {s.env: s for s in SETTINGS}


def is_setting(name: str) -> bool:
    """Whether a variable is one of the settings (SETTINGS)."""
    return name in BY_ENV


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


def refuse_retired(env: Mapping[str, str]) -> None:
    for name, instead in RETIRED.items():
        if env.get(name):
            raise SettingsError(f"{name} is no longer a setting; use {instead}")


def read_renamed(env: dict[str, str]) -> None:
    """Each renamed setting a user still sets, read under its new name (`env` changed)."""
    for old, new in RENAMED.items():
        value = env.get(old)
        if not value:
            continue
        if env.get(new) and env[new] != value:
            raise SettingsError(f"{old} (renamed {new}) and {new} differ; set only {new}")
        log.warning("%s is now %s; read as %s=%s", old, new, new, value)
        env[new] = value


def settings_table() -> str:
    """docs/SETTINGS.md's table, generated from SETTINGS."""
    lines = ["| variable | default | meaning | accepted |", "|---|---|---|---|"]
    for s in SETTINGS:
        default = f"`{s.default}`" if s.default is not None else "unset"
        lines.append(f"| `{s.env}` | {default} | {s.meaning} | {s.accepted} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(settings_table())
