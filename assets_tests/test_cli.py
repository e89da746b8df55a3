"""The command line refuses bad stream settings before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from freshness_pipeline import cli
from freshness_pipeline.lab.experiment import command
from freshness_pipeline.lab.experiment.command import EXPERIMENT_MODES
from freshness_pipeline.runtime.stack import stream_args
from freshness_pipeline.stream.generator import StreamConfig


@pytest.mark.parametrize(
    "argv",
    [
        ["experiment", "--burst-every", "5", "--burst-length", "6"],
        ["record", "--duration", "1", "--out", "never.jsonl.gz", "--burst-factor", "0"],
        ["demo", "--rate", "-1"],
        ["experiment", "--burst-every", "30", "--burst-factor", "5", "--spike-symbols", "-2"],
        ["experiment", "--universe-size", "10", "--spike-symbols", "11"],
    ],
)
def test_bad_stream_settings_are_refused_before_anything_runs(argv, capsys, monkeypatch):
    started = []
    for module, name in ((command, "cmd_experiment"), (cli, "cmd_record"), (cli, "cmd_demo")):
        monkeypatch.setattr(module, name, lambda args, name=name: started.append(name))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    assert "bad stream settings" in capsys.readouterr().err
    assert started == []


def test_good_stream_settings_reach_the_command(monkeypatch):
    seen = []
    monkeypatch.setattr(command, "cmd_experiment", lambda args: seen.append(args) or 0)
    argv = ["experiment", "--burst-every", "30", "--burst-length", "5", "--burst-factor", "20"]
    assert cli.main(argv) == 0
    assert (seen[0].burst_every, seen[0].burst_length, seen[0].burst_factor) == (30, 5, 20.0)


@pytest.mark.parametrize(
    "stream",
    [
        StreamConfig(seed=7, rate=300.0, universe_size=50),
        StreamConfig(
            seed=7, rate=300.0, universe_size=50, burst_every_s=30, burst_s=5, burst_factor=20.0
        ),
        StreamConfig(
            seed=7,
            rate=300.0,
            universe_size=50,
            burst_every_s=30,
            burst_s=5,
            burst_factor=20.0,
            spike_symbols=3,
        ),
    ],
)
def test_the_stack_replays_exactly_the_stream_it_was_given(stream):
    """The demo's replayer is a child process: the flags the stack passes it must rebuild
    the same stream, bursts included."""
    args = cli.build_parser().parse_args(["replay", *stream_args(stream)])
    assert cli._stream_config(args) == stream


def test_an_unknown_variant_is_refused_naming_the_peers(capsys, monkeypatch):
    from freshness_pipeline.lab.experiment import harness

    monkeypatch.setattr(harness, "run_experiment", lambda *a, **k: pytest.fail("ran"))
    assert cli.main(["experiment", "--variants", "pmb,eager"]) == 2
    err = capsys.readouterr().err
    assert (
        "unknown variant 'eager'" in err and "dagster_eager" in err and "interval_<seconds" in err
    )


def test_the_short_experiment_compares_pmb_with_the_peers():
    assert EXPERIMENT_MODES["short"]["variants"].split(",") == [
        "pmb",
        "max_benefit",
        "random",
        "dagster_eager",
        "interval",
    ]
    assert {"dagster_eager", "interval"} <= set(EXPERIMENT_MODES["long"]["variants"].split(","))


def test_check_passes_the_bundled_jobs_and_names_a_missing_table(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(tmp_path / "tables"))
    assert cli.main(["check"]) == 0
    assert capsys.readouterr().out.startswith("6 job(s) checked, no problem: ")
    folder = tmp_path / "jobs"
    folder.mkdir()
    (folder / "q.sql").write_text(
        "/* freshness\ninputs: [quotes]\nkey: [second, symbol]\nevent_time: second\n"
        "merge: replace_by_key\n*/\nSELECT symbol, second, arrival_ts FROM delta_quotes\n"
    )
    assert cli.main(["check", str(folder)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("q.sql: q: reads quotes: no Hudi table at "), out
    assert "q.sql: q: reads quotes: no such table and no job writes it" in out


def test_check_prints_each_declaration_problem_on_its_own_line(tmp_path, capsys):
    (tmp_path / "bad.sql").write_text("/* freshness\ninputs: [trade_raw]\n*/\nSELECT 1")
    assert cli.main(["check", str(tmp_path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert "bad.sql: bad: `key` is missing" in out
    assert any(line.startswith("bad.sql: bad: `merge` must be one of") for line in out), out


def test_check_refuses_a_table_whose_layout_is_not_its_declarations(tmp_path, capsys, monkeypatch):
    """hoodie.properties of an existing table against the declaration: Hudi cannot change
    a record key or a partitioning in place."""
    lake = tmp_path / "tables"
    hoodie = lake / "trade_aggr" / ".hoodie"
    hoodie.mkdir(parents=True)
    (hoodie / "hoodie.properties").write_text(
        "hoodie.table.name=trade_aggr\nhoodie.table.recordkey.fields=symbol,second\n"
        "hoodie.table.partition.fields=\n"
    )
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(lake))
    assert cli.main(["check"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"trade_aggr.sql: trade_aggr: its table at {lake / 'trade_aggr'} has record key "
        "'symbol,second', the declaration says 'second,symbol': rebuild the table "
        "(`freshness rebuild trade_aggr`: Hudi cannot change it in place) or fix the declaration",
        f"trade_aggr.sql: trade_aggr: its table at {lake / 'trade_aggr'} has partition "
        "'none', the declaration says 'event_hour': rebuild the table "
        "(`freshness rebuild trade_aggr`: Hudi cannot change it in place) or fix the declaration",
    ]


def test_the_stack_refuses_to_start_on_jobs_that_do_not_check(tmp_path, monkeypatch):
    """The preflight runs the same check before anything starts."""
    from freshness_pipeline.config.settings import load_settings
    from freshness_pipeline.runtime.preflight import PreflightError, preflight

    folder = tmp_path / "jobs"
    folder.mkdir()
    (folder / "q.sql").write_text(
        "/* freshness\ninputs: [trade_raw]\nkey: [second, symbol]\nevent_time: second\n"
        "merge: replace_by_key\n*/\nSELECT symbol, second, qty, arrival_ts FROM delta_trade_raw\n"
    )
    settings = load_settings(
        {"FRESHNESS_JOBS": str(folder), "FRESHNESS_LAKEHOUSE": str(tmp_path / "tables")}
    )
    with pytest.raises(PreflightError) as raised:
        preflight(settings)
    assert "q.sql: q: column second: read by the SQL but not a column" in str(raised.value)
    preflight(load_settings({"FRESHNESS_LAKEHOUSE": str(tmp_path / "tables")}))  # bundled: fine


@pytest.mark.parametrize(
    ("hold", "message"),
    [
        ("60", "expected FROM,UNTIL"),
        ("360,60", "expected 0 <= FROM < UNTIL"),
        ("60,400", "must lie inside the 300 s window"),
    ],
)
def test_a_bad_hold_is_refused_before_anything_runs(hold, message, capsys, monkeypatch):
    from freshness_pipeline.lab.experiment import harness

    monkeypatch.setattr(harness, "run_experiment", lambda *a, **k: pytest.fail("ran"))
    argv = ["experiment", "--variants", "pmb", "--duration", "300", "--hold", hold]
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err


def test_the_wide_and_recovery_options_reach_the_experiment(monkeypatch, tmp_path):
    from freshness_pipeline.lab.experiment import harness, report

    seen = []
    monkeypatch.setattr(harness, "run_experiment", lambda config, settings: seen.append(config))
    monkeypatch.setattr(report, "write_report", lambda *a: {"targets": {}})
    argv = ["experiment", "--variants", "pmb", "--duration", "600", "--out", str(tmp_path)]
    argv += ["--wide", "3", "--hold", "60,360", "--recovery-target", "120"]
    assert cli.main(argv) == 0
    config = seen[0]
    assert (config.wide_seed, config.hold_s, config.recovery_target_s) == (3, (60.0, 360.0), 120)


def test_the_interval_peer_takes_the_period_tuned_for_its_conditions(monkeypatch, tmp_path):
    from freshness_pipeline.lab.experiment import harness, report
    from freshness_pipeline.lab.experiment.variants import VARIANTS

    seen = []
    monkeypatch.setattr(harness, "run_experiment", lambda config, settings: seen.append(config))
    monkeypatch.setattr(report, "write_report", lambda *a: {"targets": {}})
    argv = ["experiment", "--variants", "pmb,interval", "--out", str(tmp_path)]
    assert cli.main([*argv, "--interval-period", "90"]) == 0
    pmb, interval = seen[0].variants
    assert interval.env["FRESHNESS_INTERVAL_S"] == "90" and "every 90 s" in interval.note
    assert pmb == VARIANTS["pmb"]
    assert cli.main([*argv, "--interval-period", "1"]) == 2  # below the sensor's minimum


def test_a_terminated_experiment_unwinds_to_stop_its_stack(monkeypatch, tmp_path):
    import os
    import signal

    from freshness_pipeline.lab.experiment import harness

    seen = []

    def run(config, settings):
        try:
            os.kill(os.getpid(), signal.SIGTERM)  # as `kill <pid>` of a background campaign
        finally:
            seen.append("unwound")  # the run's own `finally` (stack.stop) runs

    monkeypatch.setattr(harness, "run_experiment", run)
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with pytest.raises(SystemExit):
            cli.main(["experiment", "--variants", "pmb", "--out", str(tmp_path)])
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    assert seen == ["unwound"]


def test_a_report_goes_beside_its_raw_data_unless_told_where(monkeypatch, tmp_path):
    """An experiment kept elsewhere (--out) must not overwrite the report committed for its
    mode under docs/results."""
    from freshness_pipeline.config.paths import PROJECT_ROOT
    from freshness_pipeline.lab.experiment import harness, report

    written = []
    monkeypatch.setattr(harness, "run_experiment", lambda config, settings: None)
    monkeypatch.setattr(
        report, "write_report", lambda out, to: written.append(Path(to)) or {"targets": {}}
    )
    base = ["experiment", "--mode", "long", "--variants", "pmb"]
    assert cli.main([*base, "--out", str(tmp_path)]) == 0
    assert cli.main([*base, "--out", str(tmp_path), "--report-dir", str(tmp_path / "r")]) == 0
    assert cli.main(base) == 0
    assert written == [tmp_path / "report", tmp_path / "r", PROJECT_ROOT / "docs/results/long"]


def test_check_of_a_folder_takes_the_inputs_its_own_jobs_read(tmp_path, capsys, monkeypatch):
    """FRESHNESS_INPUTS declares the folder's input; FRESHNESS_JOBS is unset (the market
    jobs), which read no input of that name: check FOLDER judges the folder's jobs."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "per_account.sql").write_text(
        "/* freshness\ninputs: [txns]\nkey: [day, account_id]\nevent_time: day\n"
        "merge: recompute_touched_groups\n*/\n"
        "SELECT account_id, day, sum(amount) AS amount, max(arrival_ts) AS arrival_ts "
        "FROM group_rows GROUP BY account_id, day\n"
    )
    inputs = tmp_path / "inputs.toml"
    inputs.write_text(f'[inputs.txns]\nuri = "{tmp_path / "theirs"}"\n')
    monkeypatch.delenv("FRESHNESS_JOBS", raising=False)
    monkeypatch.setenv("FRESHNESS_INPUTS", str(inputs))
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(tmp_path / "tables"))
    assert cli.main(["check", str(folder)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert (
        out[0]
        == f"per_account.sql: per_account: reads txns: no Hudi table at {tmp_path / 'theirs'}"
    )


def test_jobs_only_is_refused_for_jobs_that_read_the_market(tmp_path, capsys, monkeypatch):
    """The market jobs read the raw tables, which only the market stream writes: --jobs-only
    refuses them, naming each, before anything starts."""
    monkeypatch.delenv("FRESHNESS_JOBS", raising=False)
    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(tmp_path / "tables"))
    assert cli.main(["demo", "--jobs-only"]) == 2
    err = capsys.readouterr().err
    assert "trade_aggr: trade_raw" in err and "price_aggr: price_raw" in err, err
    assert "market_features" not in err  # it reads the aggregates, which are jobs


def test_dagsters_storage_migrations_stay_off_the_console(tmp_path, capsys, monkeypatch):
    """Every opened instance logs its alembic migration steps at INFO: dozens of lines in
    a demo's first minutes, between the ones a user needs."""
    import logging

    monkeypatch.setenv("FRESHNESS_LAKEHOUSE", str(tmp_path / "tables"))
    cli.main(["check"])
    assert logging.getLogger("alembic.runtime.migration").getEffectiveLevel() >= logging.WARNING
