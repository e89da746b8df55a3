"""One settings object: built in one module, validated with errors that name the variable,
the value and what is accepted; docs/SETTINGS.md's table is generated from it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.paths import PROJECT_ROOT, shown_path
from freshness_pipeline.config.settings import child_environment, load_settings
from freshness_pipeline.config.variables import RENAMED, RETIRED, SETTINGS, settings_table


def test_defaults_are_the_embedded_ones():
    settings = load_settings({})
    assert settings.lakehouse_root == str(PROJECT_ROOT / ".lakehouse" / "tables")
    assert settings.landing_dir == PROJECT_ROOT / ".lakehouse" / "landing"
    assert settings.jars_dir == PROJECT_ROOT / ".cache" / "jars"
    assert (settings.spark_master, settings.spark_remote, settings.spark_mode) == (
        "local[*]",
        None,
        "service",
    )
    assert settings.scheduler.policy == "pmb" and settings.scheduler.k == 3
    assert settings.faults_dir is None
    assert settings.table_uri("trade_aggr") == str(PROJECT_ROOT / ".lakehouse/tables/trade_aggr")


@pytest.mark.parametrize(
    ("name", "value", "accepted"),
    [
        ("FRESHNESS_K", "0", "an integer of at least 1"),
        ("FRESHNESS_K", "three", "an integer of at least 1"),
        ("FRESHNESS_TICK_S", "2", "an integer of at least 5"),
        ("FRESHNESS_POLICY", "fifo", "pmb, max_benefit, random"),
        ("FRESHNESS_TMIN_MODE", "both", "pending or footer"),
        ("FRESHNESS_COST_MODE", "linear", "three_term or two_term"),
        ("FRESHNESS_SPARK_MODE", "cluster", "service or local"),
        ("FRESHNESS_SPARK_SERVICE_PORT", "-1", "a port number"),
        ("FRESHNESS_LAKEHOUSE", "hdfs://nn/lake", "s3://bucket/prefix"),
        ("FRESHNESS_LAKEHOUSE", "s3:///lake", "s3://bucket/prefix"),
        ("FRESHNESS_PROFILE", "k8s", "local or cluster"),
        ("FRESHNESS_SPARK_MASTER", "spark://no-port", "spark://host:port"),
        ("FRESHNESS_SPARK_MASTER", "mesos://m:5050", "spark://host:port"),
        ("FRESHNESS_SPARK_CORES_MAX", "0", "an integer of at least 1"),
        ("FRESHNESS_SPARK_EXECUTOR_MEMORY", "lots", "a JVM size"),
        ("FRESHNESS_STALENESS_TARGET_S", "30", "an integer of at least 60"),
        ("FRESHNESS_STALENESS_WARN_FRACTION", "1", "a number from 0 to below 1"),
        ("FRESHNESS_STALENESS_WARN_FRACTION", "half", "a number from 0 to below 1"),
        ("FRESHNESS_MAX_WAIT_S", "0", "an integer of at least 1, or off"),
        ("FRESHNESS_MAX_WAIT_S", "never", "an integer of at least 1, or off"),
    ],
)
def test_a_bad_value_names_the_variable_the_value_and_what_is_accepted(name, value, accepted):
    with pytest.raises(SettingsError) as caught:
        load_settings({name: value})
    message = str(caught.value)
    assert message.startswith(f"{name}={value!r} is not accepted: expected ")
    assert accepted in message


def test_the_staleness_target_and_its_warn_window():
    target = load_settings({}).staleness_target
    assert (target.fail_s, target.warn_s) == (300, 150)
    no_warning = load_settings({"FRESHNESS_STALENESS_WARN_FRACTION": "0"}).staleness_target
    assert no_warning.warn_s is None
    # Each value alone is fine, together they ask Dagster for a 30 s warn window.
    with pytest.raises(SettingsError) as caught:
        load_settings(
            {"FRESHNESS_STALENESS_TARGET_S": "60", "FRESHNESS_STALENESS_WARN_FRACTION": "0.5"}
        )
    message = str(caught.value)
    assert "FRESHNESS_STALENESS_WARN_FRACTION=0.5" in message
    assert "FRESHNESS_STALENESS_TARGET_S=60" in message and "under 60 s" in message


@pytest.mark.parametrize(("value", "bound"), [(None, 120), ("300", 300), ("off", None)])
def test_the_aging_bound_is_seconds_or_off(value, bound):
    environ = {} if value is None else {"FRESHNESS_MAX_WAIT_S": value}
    assert load_settings(environ).scheduler.max_wait_s == bound
    assert load_settings(environ).scheduler.first_runs_first is True
    off = load_settings({**environ, "FRESHNESS_FIRST_RUNS_FIRST": "false"})
    assert off.scheduler.first_runs_first is False


def test_cli_flags_override_the_environment():
    settings = load_settings({"FRESHNESS_K": "2"}, {"FRESHNESS_K": "4", "FRESHNESS_SEED": None})
    assert settings.scheduler.k == 4 and settings.scheduler.seed == 0
    with pytest.raises(SettingsError, match="FRESHNESS_NOPE is not a setting"):
        load_settings({}, {"FRESHNESS_NOPE": "1"})


def test_settings_are_frozen():
    settings = load_settings({})
    with pytest.raises(AttributeError):
        settings.spark_master = "yarn"  # type: ignore[misc]


def test_the_documented_settings_table_is_the_generated_one():
    documented = (PROJECT_ROOT / "docs" / "SETTINGS.md").read_text()
    assert settings_table() in documented, (
        "run `python -m freshness_pipeline.config.settings` into docs/SETTINGS.md"
    )


def test_a_retired_setting_is_refused_with_what_replaced_it():
    with pytest.raises(SettingsError, match="FRESHNESS_CHAINS"):
        load_settings({"FRESHNESS_CHAIN_DESCENDANTS": "true"})
    assert load_settings({"FRESHNESS_CHAINS": "off"}).scheduler.chains == "off"
    with pytest.raises(SettingsError, match="FRESHNESS_CHAINS"):
        load_settings({"FRESHNESS_CHAINS": "sometimes"})


def test_every_variable_the_code_names_is_a_setting():
    """Any FRESHNESS_* name written in the package is in SETTINGS (no hidden knob), or is
    a retired one that is refused when set, or an old name still read as its new one."""
    known = {s.env for s in SETTINGS} | set(RETIRED) | set(RENAMED)
    named = set()
    for path in (PROJECT_ROOT / "freshness_pipeline").rglob("*.py"):
        named |= set(re.findall(r"FRESHNESS_[A-Z_]+[A-Z]", path.read_text()))
    assert named <= known, named - known


# settings.py reads the environment; location.py sets two of the AWS SDK's own variables
# (never ours) before it builds a pyarrow S3 client.
ENVIRONMENT_MODULES = (
    "freshness_pipeline/config/settings.py",
    "freshness_pipeline/hudi/location.py",
)


# Peers written without the project read their own environment (they share no code of ours).
PEERS_DIR = "freshness_pipeline/lab/peers/"


def test_only_the_settings_module_reads_the_environment():
    readers = []
    for path in sorted((PROJECT_ROOT / "freshness_pipeline").rglob("*.py")):
        relative = path.relative_to(PROJECT_ROOT).as_posix()
        if relative in ENVIRONMENT_MODULES or relative.startswith(PEERS_DIR):
            continue
        text = path.read_text()
        if re.search(r"\bos\.(environ|getenv|putenv|unsetenv)\b", text):
            readers.append(str(Path(path).relative_to(PROJECT_ROOT)))
    assert readers == []


def test_the_postgres_password_never_shows_in_the_settings_repr():
    settings = load_settings(
        {
            "FRESHNESS_POSTGRES_URL": "postgresql+psycopg2://dagster@db:5432/dagster",
            "FRESHNESS_POSTGRES_PASSWORD": "s3cret-value",
        }
    )
    assert settings.postgres_password == "s3cret-value"
    assert "s3cret-value" not in repr(settings)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("postgresql://u@h:5432/db", "the scheme must be postgresql+psycopg2://"),
        ("postgresql+psycopg2://u:pw-in-url@h:5432/db", "keep the password out of the URL"),
        ("postgresql+psycopg2://h:5432/", "user, host and database are all required"),
    ],
)
def test_a_bad_postgres_url_is_refused_with_the_reason_and_never_quoted(value, reason):
    with pytest.raises(SettingsError) as caught:
        load_settings({"FRESHNESS_POSTGRES_URL": value})
    message = str(caught.value)
    assert message.startswith("FRESHNESS_POSTGRES_URL is not accepted: expected ")
    assert "postgresql+psycopg2://user@host:port/database" in message and reason in message
    assert value not in message and "pw-in-url" not in message


def test_raw_packing_is_refused_beside_raw_clustering_and_reaches_the_raw_layout():
    from freshness_pipeline.hudi.write import RAW_LAYOUTS, raw_layout, write_options

    with pytest.raises(SettingsError, match="FRESHNESS_RAW_PACKING=true") as refused:
        load_settings({"FRESHNESS_RAW_PACKING": "true"})  # clustering of both raw tables on
    assert "price_raw, trade_raw" in str(refused.value)
    packed = load_settings({"FRESHNESS_RAW_PACKING": "true", "FRESHNESS_CLUSTERING_TABLES": "none"})
    assert packed.raw_packing and not load_settings({}).raw_packing
    # packing: Hudi's small-file limit stays at its default, so inserts fill small files
    assert "hoodie.parquet.small.file.limit" not in write_options(
        raw_layout("trade_raw", True), "insert"
    )
    steady = write_options(raw_layout("trade_raw"), "insert")
    assert steady["hoodie.parquet.small.file.limit"] == "0"
    assert raw_layout("price_raw") == RAW_LAYOUTS["price_raw"]


def test_changed_settings_are_validated_and_leave_the_original_alone():
    base = load_settings({"FRESHNESS_TICK_S": "7", "FRESHNESS_POLICY": "random"})
    changed = base.changed({"FRESHNESS_TICK_S": "9", "FRESHNESS_POLICY": None})
    assert changed.scheduler.tick_s == 9 and changed.scheduler.policy == "pmb"  # the default
    assert base.scheduler.tick_s == 7 and base.scheduler.policy == "random"
    with pytest.raises(SettingsError, match="FRESHNESS_TICK_S='3' is not accepted"):
        base.changed({"FRESHNESS_TICK_S": "3"})
    with pytest.raises(SettingsError, match="FRESHNESS_NOPE is not a setting"):
        base.changed({"FRESHNESS_NOPE": "1"})


def test_a_child_builds_the_same_settings_from_the_environment_it_is_given(monkeypatch):
    """A process the project starts gets its settings through its environment, built
    from one Settings value: the parent's own variables (here a stale lakehouse) lose."""
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", "/somewhere/else")
    monkeypatch.setenv("FRESHNESS_TICK_S", "11")
    settings = load_settings({"FRESHNESS_LAKEHOUSE": "/lake", "FRESHNESS_POSTGRES_PASSWORD": "pw"})
    env = child_environment(settings, extra={"DAGSTER_HOME": "/home", "FRESHNESS_SEED": None})
    assert load_settings(env) == settings
    assert env["FRESHNESS_LAKEHOUSE"] == "/lake" and "FRESHNESS_TICK_S" not in env
    assert env["DAGSTER_HOME"] == "/home" and env["PATH"]  # the rest of this environment
    assert "pw" not in repr(settings)  # the texts (a secret among them) are never printed


def test_a_report_names_no_folder_of_the_machine(tmp_path):
    assert shown_path(PROJECT_ROOT / "docs" / "results" / "long") == "docs/results/long"
    outside = shown_path(tmp_path / "experiments" / "short")
    assert outside == "<outside the checkout>/experiments/short"
    assert str(tmp_path) not in outside


def test_a_cost_prior_file_is_read_and_a_bad_one_refused(tmp_path):
    good = tmp_path / "prior.json"
    good.write_text(
        '{"run_cost_s": 2.0, "jobs": {"trade_aggr": '
        '{"a_s": 3.0, "b_s_per_mib": 0.5, "c_s_per_file": 0.02}}}'
    )
    prior = load_settings({"FRESHNESS_COST_PRIOR": str(good)}).scheduler.cost_prior
    assert prior is not None and prior.run_cost_s == 2.0
    assert prior.model("trade_aggr").a_s == 3.0 and str(good) in prior.source
    with pytest.raises(SettingsError, match="no such file"):
        load_settings({"FRESHNESS_COST_PRIOR": str(tmp_path / "missing.json")})
    bad = tmp_path / "bad.json"
    bad.write_text('{"jobs": {"nightly_report": {"a_s": 1, "b_s_per_mib": 0, "c_s_per_file": 0}}}')
    with pytest.raises(SettingsError, match="no job called nightly_report"):
        load_settings({"FRESHNESS_COST_PRIOR": str(bad)})
    assert load_settings({}).scheduler.cost_prior is None


def test_a_cost_prior_may_name_the_declared_jobs_it_runs_beside_the_bundled(tmp_path):
    # The wide experiment's calibration fits every job of FRESHNESS_JOBS, not only the six.
    from freshness_pipeline.catalog.jobs import BUNDLED_JOBS_DIR
    from freshness_pipeline.lab.experiment.wide import write_wide

    write_wide(tmp_path / "wide", 1)
    prior = tmp_path / "prior.json"
    prior.write_text(
        '{"run_cost_s": 2.0, "jobs": {"letter_a": '
        '{"a_s": 3.0, "b_s_per_mib": 0.5, "c_s_per_file": 0.02}}}'
    )
    env = {"FRESHNESS_COST_PRIOR": str(prior)}
    with pytest.raises(SettingsError, match="no job called letter_a"):
        load_settings(env)
    jobs = f"{BUNDLED_JOBS_DIR}:{tmp_path / 'wide'}"
    settings = load_settings({**env, "FRESHNESS_JOBS": jobs})
    assert settings.scheduler.cost_prior.model("letter_a").a_s == 3.0


def test_runs_at_once_limits_the_planner_below_k():
    settings = load_settings({"FRESHNESS_RUNS_AT_ONCE": "1"}).scheduler
    assert settings.k == 3 and settings.launch_limit == 1
    assert load_settings({}).scheduler.launch_limit == 3
    assert load_settings({"FRESHNESS_RUNS_AT_ONCE": "5"}).scheduler.launch_limit == 3
    with pytest.raises(SettingsError, match="FRESHNESS_RUNS_AT_ONCE"):
        load_settings({"FRESHNESS_RUNS_AT_ONCE": "0"})


def test_rows_handed_on_in_memory_are_off_unless_asked_for():
    assert load_settings({}).handoff is False
    assert load_settings({"FRESHNESS_HANDOFF": "true"}).handoff is True
    with pytest.raises(SettingsError, match="FRESHNESS_HANDOFF"):
        load_settings({"FRESHNESS_HANDOFF": "sometimes"})


def test_a_renamed_setting_is_read_under_its_new_name_and_said_to_be(caplog):
    with caplog.at_level("WARNING"):
        settings = load_settings({"FRESHNESS_STEP_PARALLEL": "3"})
    assert settings.scheduler.steps_at_once == 3
    assert "FRESHNESS_STEP_PARALLEL is now FRESHNESS_STEPS_AT_ONCE" in caplog.text
    same = {"FRESHNESS_STEP_PARALLEL": "2", "FRESHNESS_STEPS_AT_ONCE": "2"}
    assert load_settings(same).scheduler.steps_at_once == 2
    with pytest.raises(
        SettingsError, match="FRESHNESS_STEP_PARALLEL .renamed FRESHNESS_STEPS_AT_ONCE. and"
    ):
        load_settings({"FRESHNESS_STEP_PARALLEL": "2", "FRESHNESS_STEPS_AT_ONCE": "3"})
    assert set(RENAMED.values()) <= {s.env for s in SETTINGS}
