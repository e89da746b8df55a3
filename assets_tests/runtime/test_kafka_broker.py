"""The broker's pure parts; the broker itself runs in assets_tests/ingestion (Spark marker)."""

from __future__ import annotations

import uuid

import pytest

from freshness_pipeline.runtime import kafka_broker
from freshness_pipeline.runtime.kafka_broker import new_cluster_id


def test_a_cluster_id_never_starts_with_a_dash(monkeypatch: pytest.MonkeyPatch):
    """kafka-storage's parser takes '-t -xyz' for a missing value, so the format step of a
    fresh broker failed one start in 64; a draw starting with '-' is drawn again."""
    dash_first = uuid.UUID(bytes=b"\xf8" + bytes(15))  # 0b111110 -> '-' in URL-safe base64
    plain = uuid.UUID(bytes=b"\x10" + bytes(15))
    draws = iter([dash_first, dash_first, plain])
    monkeypatch.setattr(kafka_broker.uuid, "uuid4", lambda: next(draws))

    cluster_id = new_cluster_id()

    assert not cluster_id.startswith("-")
    assert len(cluster_id) == 22
    assert cluster_id == "EAAAAAAAAAAAAAAAAAAAAA"


def test_cluster_ids_are_22_url_safe_characters():
    ids = {new_cluster_id() for _ in range(2000)}
    assert len(ids) == 2000
    allowed = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert all(len(i) == 22 and set(i) <= allowed and i[0] != "-" for i in ids)
