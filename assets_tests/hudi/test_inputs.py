"""Declared inputs (FRESHNESS_INPUTS): defaults, a good declaration, and every refusal
naming the file, the table and what is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from freshness_pipeline.config.parsing import SettingsError
from freshness_pipeline.config.settings import load_settings
from freshness_pipeline.hudi.inputs import InputsError, default_inputs, load_inputs
from freshness_pipeline.hudi.lakehouse import Lakehouse

LAKE = Lakehouse.parse("/lake/tables")


def _declare(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "inputs.toml"
    path.write_text(text)
    return path


def test_defaults_are_our_two_raw_tables() -> None:
    inputs = default_inputs(LAKE.root)
    assert set(inputs) == {"price_raw", "trade_raw"}
    assert not any(i.external for i in inputs.values())
    assert inputs["trade_raw"].location == LAKE.root.child("trade_raw")
    assert LAKE.with_inputs(inputs).table("trade_raw").path == "/lake/tables/trade_raw"


def test_a_declared_table_is_external_and_wins_over_the_root(tmp_path: Path) -> None:
    path = _declare(
        tmp_path,
        '[inputs.trade_raw]\nuri = "s3://market/hudi/trades"\narrival_column = "ingested_at"\n',
    )
    lake = LAKE.with_inputs(load_inputs(path, LAKE.root))
    assert lake.table("trade_raw").spark == "s3a://market/hudi/trades"
    assert lake.is_external("trade_raw") and not lake.is_external("price_raw")
    assert lake.inputs["trade_raw"].arrival_column == "ingested_at"
    assert lake.inputs["trade_raw"].read_by == ("trade_aggr",)
    assert lake.table("trade_aggr").path == "/lake/tables/trade_aggr"  # derived: ours


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[inputs.quotes]\nuri = "/x"\n', "no input called 'quotes'"),
        ("[inputs.trade_raw]\narrival_column = 'a'\n", "`uri` is required"),
        ('[inputs.trade_raw]\nuri = "ftp://x/y"\n', "unsupported scheme"),
        ('[inputs.trade_raw]\nuri = "/x"\narrival_column = "a b"\n', "not a column name"),
        ('[inputs.trade_raw]\nuri = "/x"\nread_by = ["price_aggr"]\n', "does not match"),
        ('[inputs.trade_raw]\nuri = "/x"\nwriter = "flink"\n', "unknown key(s) ['writer']"),
        ('[tables.trade_raw]\nuri = "/x"\n', "expected only [inputs.<table>]"),
        ("[inputs.trade_raw\n", "not valid TOML"),
        ('[inputs.trade_raw]\nuri = "/x"\ndeletes = "yes"\n', "deletes 'yes' is not true or false"),
    ],
)
def test_a_bad_declaration_is_refused_by_name(tmp_path: Path, text: str, message: str) -> None:
    path = _declare(tmp_path, text)
    with pytest.raises(InputsError, match=None) as raised:
        load_inputs(path, LAKE.root)
    assert message in str(raised.value)
    assert str(path) in str(raised.value)


def test_settings_refuse_a_missing_declaration_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.toml"
    with pytest.raises(SettingsError, match="FRESHNESS_INPUTS.*does not exist"):
        load_settings({"FRESHNESS_INPUTS": str(missing)})


def test_your_own_jobs_declare_inputs_by_the_names_they_read(tmp_path: Path) -> None:
    """With FRESHNESS_JOBS, the inputs are the tables those jobs read: any name, declared
    in FRESHNESS_INPUTS or ours under the lakehouse; the market raw tables are no input."""
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    (jobs / "per_account.sql").write_text(
        "/* freshness\ninputs: [txns]\nkey: [minute, account]\nevent_time: minute\n"
        "merge: partial_aggregates\ncolumns:\n  amount: sum\n*/\n"
        "SELECT account, date_trunc('MINUTE', ts) AS minute, sum(amount) AS amount,\n"
        "  max(arrival_ts) AS arrival_ts FROM delta_txns GROUP BY 1, 2\n"
    )
    declared = _declare(tmp_path, '[inputs.txns]\nuri = "/bank/hudi/txns"\n')
    settings = load_settings(
        {
            "FRESHNESS_JOBS": str(jobs),
            "FRESHNESS_INPUTS": str(declared),
            "FRESHNESS_LAKEHOUSE": "/lake/tables",
        }
    )
    inputs = settings.lakehouse.inputs
    assert set(inputs) == {"txns"}
    assert inputs["txns"].external and inputs["txns"].read_by == ("per_account",)
    assert settings.lakehouse.table("txns").path == "/bank/hudi/txns"
    with pytest.raises(SettingsError, match="no input called 'trade_raw'; declare one of txns"):
        load_settings(
            {
                "FRESHNESS_JOBS": str(jobs),
                "FRESHNESS_INPUTS": str(_declare(tmp_path, '[inputs.trade_raw]\nuri = "/x"\n')),
            }
        )


def test_a_writer_that_deletes_is_declared(tmp_path: Path) -> None:
    path = _declare(tmp_path, '[inputs.trade_raw]\nuri = "/x"\ndeletes = true\n')
    assert load_inputs(path, LAKE.root)["trade_raw"].deletes
    assert not load_inputs(None, LAKE.root)["trade_raw"].deletes  # ours: append only
