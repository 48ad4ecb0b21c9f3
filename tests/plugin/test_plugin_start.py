"""``Authorizer.start``: the controller listener opens at once, the client listener only once
the sidecar is ready (as ``StandardAuthorizer`` waits for its metadata).  The evidence is the
broker's own log line for each endpoint (``EndpointReadyFutures``) and whether a client gets
an answer."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from broker_support import Sidecar, plugin_broker, wait_until
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

pytestmark = pytest.mark.kafka


def _ready_line(endpoint: str) -> str:
    return f"authorizerStart completed for endpoint {endpoint}."


def test_client_listeners_wait_for_the_sidecar_and_the_controller_does_not(tmp_path: Path) -> None:
    sidecar = Sidecar(tmp_path / "sidecar")
    sidecar.start()  # once, so that its credential exists for the plugin's configure
    sidecar.stop()
    broker = plugin_broker(tmp_path / "kafka", sidecar)
    starter = broker.start_in_background(timeout=120)
    try:
        wait_until(lambda: broker.log_path.exists()
                   and _ready_line("CONTROLLER") in broker.log_path.read_text(errors="replace"),
                   60, "the controller listener to open")  # fmt: skip
        time.sleep(3.0)  # time enough for the client listener, had it not waited
        log = broker.log_path.read_text(errors="replace")
        assert _ready_line("SASL") not in log
        admin = AdminClient(broker.client_config("admin"))
        with pytest.raises(KafkaException):
            admin.list_topics(timeout=2)  # a super user too: the listener is not serving yet
        sidecar.start()
        starter.join(120)
        assert not starter.failures, starter.failures
        log = broker.log_path.read_text(errors="replace")
        assert _ready_line("SASL") in log
        assert "is ready: opening the broker's listeners" in log
        assert admin.list_topics(timeout=10).brokers
    finally:
        starter.join(130)
        broker.stop()
        sidecar.stop()
