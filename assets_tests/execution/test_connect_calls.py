"""Counting a run's Spark Connect calls on a fake client (the oracle test counts them on
the real service)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from freshness_pipeline.execution.connect_calls import watching


class FakeRequest:
    def __init__(self, command: str | None) -> None:
        self.command_type = command
        self.plan = self
        self.command = self

    def HasField(self, name: str) -> bool:  # noqa: N802 (protobuf's name)
        return name == "command" and self.command_type is not None

    def WhichOneof(self, name: str) -> str | None:  # noqa: N802
        return self.command_type


class FakeClient:
    def _analyze(self, method: str, **kwargs):
        return method

    def _execute_and_fetch_as_iterator(self, request):
        yield "schema"
        yield "batch"

    def config(self, operation):
        return operation


def test_every_kind_of_call_is_counted_and_the_client_restored():
    client = FakeClient()
    spark = SimpleNamespace(client=client)
    with watching(spark) as calls:
        assert client._analyze("schema") == "schema"
        assert list(client._execute_and_fetch_as_iterator(FakeRequest(None))) == ["schema", "batch"]
        list(client._execute_and_fetch_as_iterator(FakeRequest("write_operation")))
        list(client._execute_and_fetch_as_iterator(FakeRequest("write_operation")))
        client.config("get")
    assert dict(calls.count) == {
        "analyze:schema": 1,
        "query": 1,
        "command:write_operation": 2,
        "config": 1,
    }
    assert calls.total == 5 and calls.total_s >= 0
    assert calls.by_kind().startswith("command:write_operation 2 (")
    # the class's own methods again: nothing counted after the block
    assert "_analyze" not in vars(client) and "config" not in vars(client)
    client._analyze("schema")
    assert calls.total == 5


def test_a_failed_call_is_counted_and_a_stream_cut_short_too():
    class Failing(FakeClient):
        def _analyze(self, method: str, **kwargs):
            raise RuntimeError("service gone")

    client = Failing()
    with watching(SimpleNamespace(client=client)) as calls:
        with pytest.raises(RuntimeError):
            client._analyze("schema")
        stream = client._execute_and_fetch_as_iterator(FakeRequest(None))
        next(stream)
        stream.close()
    assert dict(calls.count) == {"analyze:schema": 1, "query": 1}


def test_a_local_session_has_no_client_and_counts_nothing():
    with watching(SimpleNamespace()) as calls:
        pass
    assert calls.total == 0 and calls.by_kind() == ""
