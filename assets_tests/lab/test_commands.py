"""`freshness lab NAME`: one table of the lab's commands, run with the CLI's settings."""

from __future__ import annotations

import importlib
import inspect
import sys
import types

import pytest

from freshness_pipeline import cli
from freshness_pipeline.lab import commands
from freshness_pipeline.lab.commands import COMMANDS, LabCommand


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: c.name)
def test_every_command_runs_a_main_that_takes_what_the_table_gives(command: LabCommand):
    main = importlib.import_module(f"{commands.PACKAGE}.{command.module}").main
    wanted = 2 if command.takes_settings else 1
    assert len(inspect.signature(main).parameters) == wanted, command


def test_command_names_are_unique_and_listed_in_the_help(capsys):
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)
    with pytest.raises(SystemExit):
        cli.main(["lab", "--help"])
    shown = capsys.readouterr().out
    assert all(f"  {c.name} " in shown for c in COMMANDS)


def test_a_lab_command_gets_the_clis_settings_and_bad_ones_stop_it(monkeypatch, capsys):
    seen: list[object] = []

    def main(argv: list[str], settings) -> int:
        seen.append((argv, settings.scheduler.tick_s))
        return 0

    probe = types.ModuleType("probe")
    probe.main = main
    monkeypatch.setitem(sys.modules, f"{commands.PACKAGE}.probe", probe)
    command = LabCommand("probe", "probe", "a probe")
    monkeypatch.setattr(commands, "COMMANDS", (command,))
    monkeypatch.setattr(commands, "BY_NAME", {"probe": command})
    monkeypatch.setenv("FRESHNESS_TICK_S", "7")
    assert cli.main(["lab", "probe", "--rounds", "3"]) == 0
    assert seen == [(["--rounds", "3"], 7)]
    monkeypatch.setenv("FRESHNESS_TICK_S", "3")  # refused before the command starts
    with pytest.raises(SystemExit) as stopped:
        cli.main(["lab", "probe"])
    assert stopped.value.code == 2
    assert "FRESHNESS_TICK_S='3' is not accepted" in capsys.readouterr().err
    assert len(seen) == 1
