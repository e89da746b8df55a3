# Everything a fresh machine needs is installed from these targets: the virtualenv,
# the pinned Python dependencies, and the Apache Hudi Spark bundle from Maven Central.
PYTHON ?= python3
VENV ?= .venv
HUDI_VERSION ?= 1.1.1
HUDI_BUNDLE ?= org.apache.hudi:hudi-spark3.5-bundle_2.12:$(HUDI_VERSION)
JARS_DIR ?= .cache/jars
HUDI_JAR := $(JARS_DIR)/hudi-spark3.5-bundle_2.12-$(HUDI_VERSION).jar
# The Spark Connect server for the shared Spark service; same Spark version as the wheel.
SPARK_VERSION ?= 3.5.7
CONNECT_ARTIFACT ?= org.apache.spark:spark-connect_2.12:$(SPARK_VERSION)
CONNECT_JAR := $(JARS_DIR)/spark-connect_2.12-$(SPARK_VERSION).jar
# Our Hudi conflict strategy (a stale plan never commits), compiled against the bundle and
# pyspark's own jars; javac comes with the JDK.
# An s3:// lakehouse: Spark's s3a file system (hadoop-aws must match the Hadoop of the
# pinned pyspark wheel, 3.3.4 for pyspark 3.5.7; aws-java-sdk-bundle is the SDK version
# that hadoop-aws release was built against).
HADOOP_AWS_VERSION ?= 3.3.4
AWS_SDK_BUNDLE_VERSION ?= 1.12.262
HADOOP_AWS_JAR := $(JARS_DIR)/hadoop-aws-$(HADOOP_AWS_VERSION).jar
AWS_SDK_BUNDLE_JAR := $(JARS_DIR)/aws-java-sdk-bundle-$(AWS_SDK_BUNDLE_VERSION).jar
# The local S3 API server (s3proxy, pinned in infra/s3proxy/pom.xml) and its dependencies.
S3PROXY_DIR ?= .cache/s3proxy
S3PROXY_STAMP := $(S3PROXY_DIR)/.installed
GUARD_SRC := $(wildcard freshness_pipeline/jvm/*.java)
GUARD_JAR := $(JARS_DIR)/freshness-hudi-guard.jar
# What our Spark drivers run in place of Spark's and Hadoop's own (a Kryo pool per JVM,
# local file permissions by Java): Spark and Hadoop only, so a local driver can load it
# from its own classpath (jvm/spark).
SPARK_JVM_SRC := $(wildcard freshness_pipeline/jvm/spark/*.java)
SPARK_JVM_JAR := $(JARS_DIR)/freshness-spark-jvm.jar
# Spark's Connect server bound to 127.0.0.1 (Spark 3.5's own binds every interface),
# compiled against pyspark's jars and the Connect jar.
LAUNCHER_SRC := $(wildcard freshness_pipeline/jvm/connect/*.java)
LAUNCHER_JAR := $(JARS_DIR)/freshness-connect-launcher.jar
# The Java agent (jvm/agent): Connect sessions without code of their own share one class
# loader (the service), Hadoop configurations written for tasks carry no sources (every driver).
AGENT_SRC := $(wildcard freshness_pipeline/jvm/agent/*.java)
AGENT_JAR := $(JARS_DIR)/freshness-agent.jar
# The single-node Kafka broker (KRaft) for `freshness demo --source kafka`: kafka_2.13 and
# its runtime dependencies from Maven Central (infra/kafka/pom.xml) into .cache/kafka.
KAFKA_VERSION ?= 4.1.1
KAFKA_DIR ?= .cache/kafka
KAFKA_STAMP := $(KAFKA_DIR)/.kafka-$(KAFKA_VERSION)
export FRESHNESS_JARS_DIR := $(abspath $(JARS_DIR))
export DAGSTER_HOME ?= $(abspath .dagster_home)

.PHONY: setup demo demo-kafka test test-fast lint typecheck format bench-ingest bench-kafka-ingest bench-growth bench-tick bench-handoff \
	bench-tick-real bench-overhead bench-steps-at-once bench-chains bench-cost-fit bench-launch profile-service bench-fresh-cost bench-memory bench-lineage experiment experiment-long experiment-targets experiment-plain experiment-plain-wide experiment-chains experiment-bursty experiment-packed tune-interval \
	experiment-wide tune-interval-wide experiment-recovery experiment-recovery-wide \
	simulate simulate-aging simulate-published simulate-wide model-check-wide model-check-recovery model-check-recovery-wide model-check-budget model-check-targets first-materializations chaos soak soak-no-clustering \
	clean-data postgres chromium demo-cluster demo-cluster-secure test-ui

# Reproducible install: requirements.lock pins every Python package (transitive, with
# hashes) for CPython 3.11 on linux x86_64; setup installs exactly that, then the project
# with --no-deps. pyproject.toml stays the source of truth (assets_tests/test_lockfile.py
# fails when the lock no longer satisfies it): after changing it, run `make lock` and commit
# requirements.lock. A hashed requirements file because plain pip installs it (pylock.toml
# is still experimental in pip); uv, used by `make lock` only, resolves for that target from
# any machine in seconds.
LOCK ?= requirements.lock
LOCK_PYTHON ?= 3.11
LOCK_PLATFORM ?= x86_64-unknown-linux-gnu
UV_VERSION ?= 0.13.9
LOCK_ARGS ?=

$(VENV)/.installed: $(LOCK) pyproject.toml
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --upgrade pip
	$(VENV)/bin/pip install --quiet --require-hashes -r $(LOCK)
	$(VENV)/bin/pip install --quiet --no-deps -e .
	touch $@

.PHONY: lock
lock:
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet uv==$(UV_VERSION)
	$(VENV)/bin/uv pip compile pyproject.toml --extra dev --generate-hashes \
	  --python-version $(LOCK_PYTHON) --python-platform $(LOCK_PLATFORM) \
	  --custom-compile-command 'make lock' --quiet $(LOCK_ARGS) -o $(LOCK)

$(HUDI_JAR):
	mkdir -p $(JARS_DIR)
	mvn --batch-mode --quiet dependency:copy -Dartifact=$(HUDI_BUNDLE) -DoutputDirectory=$(JARS_DIR)

$(CONNECT_JAR):
	mkdir -p $(JARS_DIR)
	mvn --batch-mode --quiet dependency:copy -Dartifact=$(CONNECT_ARTIFACT) -DoutputDirectory=$(JARS_DIR)

$(HADOOP_AWS_JAR):
	mkdir -p $(JARS_DIR)
	mvn --batch-mode --quiet dependency:copy \
	  -Dartifact=org.apache.hadoop:hadoop-aws:$(HADOOP_AWS_VERSION) -DoutputDirectory=$(JARS_DIR)

$(AWS_SDK_BUNDLE_JAR):
	mkdir -p $(JARS_DIR)
	mvn --batch-mode --quiet dependency:copy \
	  -Dartifact=com.amazonaws:aws-java-sdk-bundle:$(AWS_SDK_BUNDLE_VERSION) -DoutputDirectory=$(JARS_DIR)

$(S3PROXY_STAMP): infra/s3proxy/pom.xml
	rm -rf $(S3PROXY_DIR) && mkdir -p $(S3PROXY_DIR)
	mvn --batch-mode --quiet -f infra/s3proxy/pom.xml dependency:copy-dependencies \
	  -DincludeScope=runtime -DoutputDirectory=$(abspath $(S3PROXY_DIR))
	touch $@

.PHONY: s3-deps
s3-deps: $(HADOOP_AWS_JAR) $(AWS_SDK_BUNDLE_JAR) $(S3PROXY_STAMP)

# $(call javac_jar,<extra classpath>,<sources>): compiles our Java against pyspark's own jars
# and the extra one into the target jar.
define javac_jar
	rm -rf $@.classes && mkdir -p $@.classes
	javac --release 11 -nowarn -d $@.classes \
	  -cp "$(1):$$($(VENV)/bin/python -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')/jars/*" \
	  $(2)
	jar cf $@ -C $@.classes .
	rm -rf $@.classes
endef

$(GUARD_JAR): $(GUARD_SRC) $(HUDI_JAR) $(VENV)/.installed
	$(call javac_jar,$(HUDI_JAR),$(GUARD_SRC))

$(SPARK_JVM_JAR): $(SPARK_JVM_SRC) $(VENV)/.installed
	$(call javac_jar,,$(SPARK_JVM_SRC))

$(LAUNCHER_JAR): $(LAUNCHER_SRC) $(CONNECT_JAR) $(VENV)/.installed
	$(call javac_jar,$(CONNECT_JAR),$(LAUNCHER_SRC))

$(AGENT_JAR): $(AGENT_SRC) $(VENV)/.installed
	$(call javac_jar,,$(AGENT_SRC))
	printf 'Premain-Class: freshness.agent.FreshnessAgent\n' > $@.manifest
	jar ufm $@ $@.manifest && rm $@.manifest

$(DAGSTER_HOME)/dagster.yaml: dagster.yaml
	mkdir -p $(DAGSTER_HOME)
	ln -sf $(abspath dagster.yaml) $@

$(KAFKA_STAMP): infra/kafka/pom.xml
	rm -rf $(KAFKA_DIR) && mkdir -p $(KAFKA_DIR)
	mvn --batch-mode --quiet -f infra/kafka/pom.xml dependency:copy-dependencies \
	  -Dkafka.version=$(KAFKA_VERSION) -DincludeScope=runtime -DoutputDirectory=$(abspath $(KAFKA_DIR))
	touch $@

.PHONY: kafka
kafka: $(KAFKA_STAMP)

# Debian's PostgreSQL server for the cluster profile's Dagster storage; installed only when
# no server binaries are there (freshness_pipeline/runtime/postgres_server.py finds them).
postgres:
	@if ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then \
	  echo "PostgreSQL present: $$(ls /usr/lib/postgresql/*/bin/postgres)"; \
	else \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql; \
	fi

# Debian's Chromium and its ChromeDriver for the browser tests (assets_tests/ui); installed
# only when either binary is missing. Never a test tool's own browser download.
chromium:
	@if [ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ]; then \
	  echo "Chromium present: $$(/usr/bin/chromium --version 2>/dev/null)"; \
	else \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver; \
	fi

setup: $(VENV)/.installed $(HUDI_JAR) $(CONNECT_JAR) $(GUARD_JAR) $(SPARK_JVM_JAR) $(LAUNCHER_JAR) $(AGENT_JAR) s3-deps \
	$(DAGSTER_HOME)/dagster.yaml $(KAFKA_STAMP) postgres chromium

demo: setup
	$(VENV)/bin/freshness demo

# The same pipeline on Postgres and a Spark standalone cluster (master + worker), all local.
demo-cluster: setup
	$(VENV)/bin/freshness demo --profile cluster

# The same on servers secured as a firm runs them (a CA made for them, TLS Postgres, HTTPS
# object store, spark.authenticate, Kafka over SASL_SSL): docs/DEPLOY.md.
demo-cluster-secure: setup
	$(VENV)/bin/freshness demo --profile cluster --secure --source kafka

test: setup
	$(VENV)/bin/ruff check freshness_pipeline assets_tests
	$(VENV)/bin/ruff format --check freshness_pipeline assets_tests
	$(VENV)/bin/mypy
	$(VENV)/bin/pytest

test-fast: setup
	$(VENV)/bin/pytest -m 'not spark and not ui'

# The browser tests that need no Spark: the webserver over the definitions in headless Chromium.
test-ui: setup
	$(VENV)/bin/pytest -m 'ui and not spark'

lint: setup
	$(VENV)/bin/ruff check freshness_pipeline assets_tests
	$(VENV)/bin/ruff format --check freshness_pipeline assets_tests
	$(VENV)/bin/mypy

# The type checker on the pure layers (pyproject.toml [tool.mypy]).
typecheck: setup
	$(VENV)/bin/mypy

format: setup
	$(VENV)/bin/ruff format freshness_pipeline assets_tests
	$(VENV)/bin/ruff check --fix freshness_pipeline assets_tests

bench-ingest: setup
	$(VENV)/bin/freshness lab ingest-rate

bench-kafka-ingest: setup
	$(VENV)/bin/freshness lab kafka-ingest-rate

demo-kafka: setup
	$(VENV)/bin/freshness demo --source kafka

bench-growth: setup
	$(VENV)/bin/freshness lab incremental-growth

bench-tick: setup
	$(VENV)/bin/freshness lab sensor-tick

bench-tick-real: setup
	$(VENV)/bin/freshness lab sensor-tick --real-files 5000

bench-overhead: setup
	$(VENV)/bin/freshness lab run-overhead

# A wide chain (enriched_features and the views below it) one step after another against
# three at a time, side by side on a throwaway wide lakehouse (about 20 minutes).
bench-steps-at-once: setup
	$(VENV)/bin/freshness lab steps-at-once

bench-chains: setup
	$(VENV)/bin/freshness lab chain-plan --jobs 30

# A chain's children reading their parents' rows from memory against from Hudi, side by
# side on one input (about 10 minutes; docs/BENCHMARKS.md).
bench-handoff: setup
	$(VENV)/bin/freshness lab handoff

# How a code server starts runs, spawn against forkserver (FRESHNESS_RUN_START), two
# pairs of 4-minute stacks, alternating (about 25 minutes; docs/BENCHMARKS.md).
bench-launch: setup
	$(VENV)/bin/freshness lab run-launch

bench-memory: setup
	$(VENV)/bin/freshness lab memory --minutes 60

# The cost model's estimates against a campaign's measured steps, under the level rule the
# sensor plans on and the one before it (CAMPAIGN: a campaign's runs folder).
bench-cost-fit: setup
	$(VENV)/bin/freshness lab cost-fit $(or $(CAMPAIGN),docs/results/recovery-wide/runs)

# Where the JVMs' CPU goes: the demo's pipeline watched through one window after a warm-up,
# each JVM's threads by kind (/proc) and a Java Flight Recording's hottest frames.
profile-service: setup
	$(VENV)/bin/freshness lab jvm-profile --warmup $(or $(WARMUP),30) --seconds $(or $(WINDOW),300)

# A JVM setting on fixed work: a fresh service and ingestion driver per arm (ARMS: see
# `freshness lab fresh-cost --help`; default: the project's settings against the JVM's own).
bench-fresh-cost: setup
	$(VENV)/bin/freshness lab fresh-cost --repeats $(or $(REPEATS),2) --rounds $(or $(ROUNDS),6) \
	  $(if $(ARMS),--arms '$(ARMS)')

bench-lineage: setup
	$(VENV)/bin/freshness lab lineage-load --rounds 21

experiment: setup
	$(VENV)/bin/freshness experiment --mode short

# A campaign of about 3.9 hours: run it a seed (or a few variants) at a time, e.g.
# `make experiment-long SEEDS=1 VARIANTS=pmb,max_benefit,random,dagster_eager,interval`.
# Each finished (seed, variant) keeps its measurements in docs/results/long/runs (committed;
# the lakehouses, Dagster homes, logs and recorded streams are not), so later sessions on
# other machines add to the same campaign and the report pools all of it.
experiment-long: setup
	$(VENV)/bin/freshness experiment --mode long --resume \
	  --out docs/results/long/runs --report-dir docs/results/long \
	  $(if $(SEEDS),--seeds $(SEEDS)) $(if $(VARIANTS),--variants $(VARIANTS))

# The campaign the targets of the refresh's cost and the machine's budget are judged on:
# PMB with and without the budget against eager and the interval, five seeds, one layout
# and window per report, every run on one commit (--resume keeps only runs of the commit
# the folder's first run was made on). LAYOUT=published or declared; WARMUP=600 measures
# the window after ten minutes of running (a warm service). About 25 min a seed fresh,
# 65 min warm; SEEDS= runs a part, the rest later on the same commit.
TARGET_VARIANTS ?= pmb,pmb_budget,dagster_eager,interval
TARGET_SEEDS = 1,2,3,4,5
TARGET_LAYOUT = $(or $(LAYOUT),published)
TARGET_DIR = docs/results/long-$(TARGET_LAYOUT)$(if $(WARMUP),-warm)
experiment-targets: setup
	$(VENV)/bin/freshness experiment --mode long --resume --warm-cost \
	  --layout '$(subst declared,,$(TARGET_LAYOUT))' $(if $(WARMUP),--warmup $(WARMUP)) \
	  --out $(TARGET_DIR)/runs --report-dir $(TARGET_DIR) \
	  --seeds $(or $(SEEDS),$(TARGET_SEEDS)) --variants $(TARGET_VARIANTS)

# What a Dagster user would build without this project (the plain peer, eager and cron)
# beside PMB and Dagster's eager automation over our jobs: five seeds on the declared layout
# (our tables by event hour, as the peer's partitions), one commit. About 7 min a run.
PLAIN_VARIANTS ?= pmb,dagster_eager,dagster_plain,dagster_plain_cron
PLAIN_SEEDS = 1,2,3,4,5
experiment-plain: setup
	$(VENV)/bin/freshness experiment --mode long --resume --warm-cost --layout '' \
	  --out docs/results/long-plain/runs --report-dir docs/results/long-plain \
	  --seeds $(or $(SEEDS),$(PLAIN_SEEDS)) --variants $(PLAIN_VARIANTS)

# Chains against the peers (METHOD 8): the variants the chains are judged by (and
# pmb_serial, one run in flight), five seeds, all fresh on one commit (--resume keeps only
# runs of the same commit), every variant from the same calibrated cost prior; about 6.5
# minutes a run, so about 3 h 20 min on 2 cores: SEEDS= runs a part, the rest later on the
# same commit.
CHAIN_VARIANTS ?= pmb,pmb_serial,max_benefit,random,dagster_eager,interval
# A variable, not $(or $(SEEDS),1,2,3): make splits a function's arguments at its commas.
CHAIN_SEEDS = 1,2,3,4,5
experiment-chains: setup
	$(VENV)/bin/freshness experiment --mode long --resume --warm-cost \
	  --out docs/results/long/runs --report-dir docs/results/long \
	  --seeds $(or $(SEEDS),$(CHAIN_SEEDS)) --variants $(CHAIN_VARIANTS)

# Where subsets should help (issue 18 item 4), each a campaign of about an hour (three
# variants, three seeds, 300 s windows), kept like experiment-long's; SEEDS= picks a part.
# Bursty: every minute a 10 s burst at 10x the rate, its extra events on 5 symbols.
experiment-bursty: setup
	$(VENV)/bin/freshness experiment --mode long --variants pmb,max_benefit,random --resume \
	  --burst-every 60 --burst-length 10 --burst-factor 10 --spike-symbols 5 \
	  --out docs/results/bursty/runs --report-dir docs/results/bursty \
	  $(if $(SEEDS),--seeds $(SEEDS))

# The published raw-table regime: ingestion packs small files, so pending files are big
# with few new rows.
experiment-packed: setup
	$(VENV)/bin/freshness experiment --mode long --variants pmb,max_benefit,random --resume \
	  --raw-packing --out docs/results/packed/runs --report-dir docs/results/packed \
	  $(if $(SEEDS),--seeds $(SEEDS))

# Where the scheduler has a choice: the wide lakehouse of experiment/wide.py (seed 1: the
# six jobs and 43 declared ones, 49 tables) against every peer, each declaration on its own
# layout, 10-minute windows (a minute's drain after each: runs still going then are cut
# off), three seeds fresh on one commit (--resume keeps only runs of the same commit), every
# variant from one calibrated cost prior: about 12 minutes a run, 3.2 hours with the
# calibration; SEEDS= runs a part, the rest later on that commit.
# The interval peer's N for these conditions comes from tune-interval-wide (seed 99).
WIDE_VARIANTS ?= pmb,max_benefit,random,dagster_eager,interval
CAMPAIGN_SEEDS = 1,2,3
WIDE_INTERVAL_S ?= 60
WIDE_FLAGS = --mode long --wide 1 --layout '' --duration 600 --drain 60 --warm-cost --resume \
  --interval-period $(WIDE_INTERVAL_S)
experiment-wide: setup
	$(VENV)/bin/freshness experiment $(WIDE_FLAGS) \
	  --out docs/results/wide/runs --report-dir docs/results/wide \
	  --seeds $(or $(SEEDS),$(CAMPAIGN_SEEDS)) --variants $(WIDE_VARIANTS)

# The plain peer on the wide lakehouse beside ours and eager (issue 57): three seeds.
PLAIN_WIDE_VARIANTS ?= pmb,dagster_eager,dagster_plain
experiment-plain-wide: setup
	$(VENV)/bin/freshness experiment $(WIDE_FLAGS) \
	  --out docs/results/wide-plain/runs --report-dir docs/results/wide-plain \
	  --seeds $(or $(SEEDS),$(CAMPAIGN_SEEDS)) --variants $(PLAIN_WIDE_VARIANTS)

tune-interval-wide: setup
	$(VENV)/bin/freshness experiment --mode long --wide 1 --layout '' --duration 600 --drain 60 \
	  --no-warm-cost --seeds 99 --variants interval_30,interval_60,interval_120 --resume \
	  --out .lakehouse/experiments/interval-tuning-wide \
	  --report-dir docs/results/wide/interval-tuning

# The recovery condition: Dagster's daemon down from 60 s to 300 s into a 10-minute window
# (an outage, a deploy) while ingestion goes on, with bursts on a few symbols (uneven bytes
# per arrival); recovered once every table is within RECOVERY_TARGET_S. On the six tables
# and on the wide lakehouse; each about 3.3 hours, kept and resumed like experiment-wide.
RECOVERY_FLAGS = --mode long --layout '' --duration 600 --drain 60 --warm-cost --resume \
  --hold 60,300 --burst-every 60 --burst-length 10 --burst-factor 5 --spike-symbols 5
experiment-recovery: setup
	$(VENV)/bin/freshness experiment $(RECOVERY_FLAGS) --recovery-target $(or $(RECOVERY_TARGET_S),120) \
	  --out docs/results/recovery/runs --report-dir docs/results/recovery \
	  --seeds $(or $(SEEDS),$(CAMPAIGN_SEEDS)) --variants $(WIDE_VARIANTS)

experiment-recovery-wide: setup
	$(VENV)/bin/freshness experiment $(RECOVERY_FLAGS) --wide 1 --interval-period $(WIDE_INTERVAL_S) \
	  --recovery-target $(or $(RECOVERY_TARGET_S),120) \
	  --out docs/results/recovery-wide/runs --report-dir docs/results/recovery-wide \
	  --seeds $(or $(SEEDS),$(CAMPAIGN_SEEDS)) --variants $(WIDE_VARIANTS)

# The interval peer's period N, tuned on seed 99 (no measured run uses it) under the short
# mode's conditions; the best N becomes DEFAULT_INTERVAL_S (scheduler_settings.py).
tune-interval: setup
	$(VENV)/bin/freshness experiment --mode short --seeds 99 \
	  --variants interval_20,interval_40,interval_60 \
	  --out .lakehouse/experiments/interval-tuning --report-dir docs/results/interval-tuning

# 50 faults on a live pipeline, then a drain and both oracles; writes docs/RELIABILITY.md.
chaos: setup
	$(VENV)/bin/freshness lab chaos --faults 50 --duration 1200 \
	  --report docs/RELIABILITY.md

# One hour of the live demo: memory flat, timelines and old file slices bounded, no
# failed run; writes the soak section of docs/RELIABILITY.md.
soak: setup
	$(VENV)/bin/freshness lab soak --minutes 60 --report docs/RELIABILITY.md

# The same hour with clustering off (issue 19: file counts, tick and run times without it;
# its report is docs/results/soak-no-clustering.md, the soak with it is in RELIABILITY.md).
soak-no-clustering: setup
	FRESHNESS_CLUSTERING_TABLES=none $(VENV)/bin/freshness lab soak \
	  --minutes 60 --report docs/results/soak-no-clustering.md --section soak-no-clustering

simulate: setup
	$(VENV)/bin/freshness lab simulate

# Aging on the modelled machine: P, each job's longest wait, all six first materialized by
# (docs/BENCHMARKS.md, "Aging").
simulate-aging: setup
	$(VENV)/bin/freshness lab simulate-aging

# After `make clean-data && make demo`: each table's first materialization after the start
# (SINCE="2026-11-23T22:10:00", the demo's start in UTC; unset: its first run's launch).
first-materializations:
	$(VENV)/bin/freshness lab first-materializations $(if $(SINCE),--since "$(SINCE)")

# METHOD 4's conditions (K = 3, 184 s + b/MiB, 14.8k events/s for 3 h, copy-on-write
# packing) through the model: P(PMB)/P(Random) and P(PMB)/P(Max-Benefit) against the
# published 0.864 and 0.955, 5 seeds (about 4 minutes on 2 shared cores).
simulate-published: setup
	$(VENV)/bin/freshness lab published-scale

# Where the choice matters, by the model, before the real runs: the wide lakehouse of
# experiment/wide.py (49 tables) and a recovery after a 5-minute hold, against every peer,
# on the machine as calibrated and with runs near the floor (3 seeds, about 3 minutes).
simulate-wide: setup
	$(VENV)/bin/freshness lab simulate-wide --seeds 1,2,3 \
	  --out docs/results/wide/PREDICTIONS.md

# After the real wide campaign: the predictions against the real runs, and the model run
# again with each step as measured and the machine's concurrency varied (about 2 minutes).
model-check-wide: setup
	$(VENV)/bin/freshness lab model-check docs/results/wide/runs \
	  --at-once 3 --out docs/results/wide/MODEL-CHECK.md

model-check-recovery: setup
	$(VENV)/bin/freshness lab model-check docs/results/recovery/runs \
	  --campaign recovery --out docs/results/recovery/MODEL-CHECK.md

# The model beside the targets' campaign (LAYOUT= and WARMUP= as for experiment-targets).
model-check-targets: setup
	$(VENV)/bin/freshness lab model-check $(TARGET_DIR)/runs \
	  --campaign long --out $(TARGET_DIR)/MODEL-CHECK.md

model-check-budget: setup
	$(VENV)/bin/freshness lab model-check docs/results/budget-published/runs \
	  --campaign long --out docs/results/budget-published/MODEL-CHECK.md

model-check-recovery-wide: setup
	$(VENV)/bin/freshness lab model-check \
	  docs/results/recovery-wide/runs --campaign recovery-wide \
	  --out docs/results/recovery-wide/MODEL-CHECK.md

clean-data:
	rm -rf .lakehouse $(DAGSTER_HOME)/storage $(DAGSTER_HOME)/history $(DAGSTER_HOME)/logs $(DAGSTER_HOME)/schedules
