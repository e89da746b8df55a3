"""The code server's memory probe (memory_probe.py): which process it runs in, and that a
sample finds the allocation site and the type that grew."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections import Counter

import pytest

from freshness_pipeline.runtime import memory_probe
from freshness_pipeline.runtime.memory_probe import MemoryProbe, is_code_server, type_growth


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["dagster", "api", "grpc", "--lazy-load-user-code", "--port", "4000"], True),
        (["dagster", "code-server", "start", "-m", "freshness_pipeline.definitions"], True),
        (["dagster", "api", "execute_run", "{...}"], False),
        (["dagster-daemon", "run", "-w", "workspace.yaml"], False),
        (["pytest", "assets_tests"], False),
    ],
)
def test_only_a_code_server_is_probed(argv, expected):
    assert is_code_server(argv) is expected


def test_type_growth_lists_grown_types_largest_first():
    first = Counter({"dict": 10, "Commit": 5, "list": 3})
    now = Counter({"dict": 12, "Commit": 55, "list": 1, "Slice": 4})
    assert type_growth(first, now) == [["Commit", 55, 50], ["Slice", 4, 4], ["dict", 12, 2]]


class Leaky:
    pass


def test_a_sample_names_the_site_and_type_that_grew(tmp_path):
    tracemalloc.start(memory_probe.FRAMES)
    try:
        probe = MemoryProbe(tmp_path / "probe.jsonl", interval_s=60)
        probe.sample()  # the baseline
        kept = [Leaky() for _ in range(20_000)]
        blob = [bytes(1024) for _ in range(4_000)]  # ~4 MiB from one line
        second = probe.sample()
    finally:
        tracemalloc.stop()
    assert second["traced_mib"] >= 4
    top = second["grown_sites"][0]
    assert top["growth_kib"] >= 4_000
    assert any(frame.startswith(__file__) for frame in top["path"])
    assert ["Leaky", 20_000, 20_000] in second["grown_types"]
    # The grown type's newest objects, and who holds them: the list `kept`.
    [example, *_] = second["examples"]["Leaky"]
    assert "Leaky object" in example["repr"]
    assert any(holder.startswith("list:") for holder in example["held_by"])
    assert second["rss_mib"] > 0
    json.dumps(second)  # one JSON line per sample
    del kept, blob


def _first_line(path) -> str:
    text = path.read_text() if path.exists() else ""
    return text.split("\n", 1)[0] if "\n" in text else ""


def test_started_only_in_a_code_server_with_a_file(tmp_path, monkeypatch):
    monkeypatch.setattr(memory_probe, "_started", False)
    target = tmp_path / "probe.jsonl"
    worker = ["dagster", "api", "execute_run", "{}"]
    assert memory_probe.start_if_requested(target, 5, argv=worker) is None
    server = ["dagster", "api", "grpc"]
    assert memory_probe.start_if_requested(None, 5, argv=server) is None
    was_tracing = tracemalloc.is_tracing()
    try:
        probe = memory_probe.start_if_requested(target, 5, argv=server)
        assert probe is not None
        assert memory_probe.start_if_requested(target, 5, argv=server) is None  # once
        deadline = time.monotonic() + 30
        # The file exists from the moment the probe opens it, before its first
        # line is written: wait for a whole line, not for the file.
        while not _first_line(target) and time.monotonic() < deadline:
            time.sleep(0.2)
        probe.stopped.set()
        line = json.loads(_first_line(target))
        assert line["pid"] > 0 and "rss_mib" in line
        assert tracemalloc.is_tracing()
    finally:
        if not was_tracing:
            tracemalloc.stop()


def test_without_frames_the_probe_samples_without_tracemalloc(tmp_path):
    assert not tracemalloc.is_tracing()
    probe = MemoryProbe(tmp_path / "probe.jsonl", interval_s=60)
    probe.sample()
    kept = [Leaky() for _ in range(1_000)]
    second = probe.sample()
    assert second["grown_sites"] == [] and second["traced_mib"] == 0
    assert ["Leaky", 1_000, 1_000] in second["grown_types"]
    del kept


def test_a_package_imported_after_the_start_is_named_with_who_imported_it(tmp_path):
    """A step in a code server's memory is often a library imported late: the sample names
    the package and the call path of its first import."""
    import sys

    probe = MemoryProbe(tmp_path / "probe.jsonl", 60)
    assert "wave" not in sys.modules  # a stdlib package nothing here imports
    _import_wave()
    found = probe.sample()["late_imports"]
    assert "wave" in found and "_import_wave" in found["wave"], found
    assert "os" not in found  # imported before the probe started


def _import_wave() -> None:
    import wave  # noqa: F401
