"""The local broker's cluster ids: what Kafka's StorageTool accepts, every time."""

from __future__ import annotations

import base64

import pytest

from devtools.kafka_process import _cluster_id

pytestmark = pytest.mark.unit


def test_cluster_ids_are_16_random_bytes_and_never_look_like_an_option() -> None:
    ids = [_cluster_id() for _ in range(5000)]
    # One urlsafe-base64 id in 64 starts with "-" and StorageTool's "-t ID" then fails.
    assert not any(i.startswith("-") for i in ids)
    assert all(len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)
    assert len(set(ids)) == len(ids)
