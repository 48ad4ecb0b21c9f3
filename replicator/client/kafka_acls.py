"""ACL administration through a Kafka broker: kafka-acls.sh's ``--bootstrap-server`` path.

A broker whose authorizer is aclstore's plugin (``plugin/``) forwards CreateAcls, DescribeAcls
and DeleteAcls to the store, which records the Kafka caller as the actor.  This client speaks
those Kafka requests with confluent-kafka's AdminClient and answers in the store API's shapes
(:mod:`replicator.contract.answers`), so that the CLI prints both paths alike.  Kafka's protocol
carries no log offset: ``offset`` is None on this path.

``--command-config`` on this path is a Kafka client properties file, as for kafka-acls.sh:
:func:`store.log.client_properties.librdkafka_config` turns the Java client's keys into
confluent-kafka's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from replicator.contract.bindings import InvalidItem, acl_filter, binding, binding_json, filter_json
from store.errors import InvalidRequestError
from store.interop import from_confluent, to_confluent, to_confluent_filter
from store.log.client_properties import librdkafka_config


def _item_error(exc: BaseException) -> dict[str, Any]:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if error is not None and hasattr(error, "code"):
        return {"error": error.name(), "message": error.str(), "kafkaErrorCode": error.code()}
    return {"error": type(exc).__name__, "message": str(exc), "kafkaErrorCode": -1}


class KafkaAclClient:
    """CreateAcls / DescribeAcls / DeleteAcls against a broker, answered as the store answers."""

    def __init__(
        self, bootstrap_servers: str, properties: Mapping[str, str], *, timeout_s: float = 30.0
    ) -> None:
        config: dict[str, str | int | float | bool] = {**librdkafka_config(properties)}
        config["bootstrap.servers"] = bootstrap_servers
        self._admin = AdminClient(config)
        self._timeout = timeout_s

    def send(self, name: str, body: Any) -> dict[str, Any]:
        if name == "describe_acls":
            return self._describe(body)
        if name == "create_acls":
            return self._create(body)
        if name == "delete_acls":
            return self._delete(body)
        raise InvalidRequestError(f"{name} is not an ACL request a Kafka broker answers")

    def _describe(self, body: Any) -> dict[str, Any]:
        wanted = acl_filter(body["filter"], "filter")
        future = self._admin.describe_acls(to_confluent_filter(wanted), request_timeout=self._timeout)
        try:
            found = future.result(timeout=self._timeout)
        except KafkaException as exc:
            raise InvalidRequestError(f"DescribeAcls failed: {_item_error(exc)['message']}") from exc
        return {"bindings": [binding_json(from_confluent(b)) for b in found], "offset": None}

    def _create(self, body: Any) -> dict[str, Any]:
        items = [binding(b, f"bindings[{i}]") for i, b in enumerate(body["bindings"])]
        valid = [b for b in items if not isinstance(b, InvalidItem)]
        if len(valid) != len(items):
            raise InvalidRequestError("a binding to create has an ANY or MATCH value")
        futures = self._admin.create_acls([to_confluent(b) for b in valid], request_timeout=self._timeout)
        results = []
        for ours, ck in zip(valid, futures, strict=True):
            try:
                futures[ck].result(timeout=self._timeout)
                error = None
            except KafkaException as exc:
                error = _item_error(exc)
            results.append({"binding": binding_json(ours), "error": error})
        return {"results": results, "offset": None}

    def _delete(self, body: Any) -> dict[str, Any]:
        filters = [acl_filter(f, f"filters[{i}]") for i, f in enumerate(body["filters"])]
        futures = self._admin.delete_acls(
            [to_confluent_filter(f) for f in filters], request_timeout=self._timeout
        )
        results = []
        for ours, ck in zip(filters, futures, strict=True):
            try:
                deleted = [binding_json(from_confluent(b)) for b in futures[ck].result(timeout=self._timeout)]
                error = None
            except KafkaException as exc:
                deleted, error = [], _item_error(exc)
            results.append({"filter": filter_json(ours), "deleted": deleted, "error": error})
        return {"results": results, "offset": None}

    def close(self) -> None:
        """AdminClient holds no connection to close explicitly; here for the ``with`` form."""

    def __enter__(self) -> KafkaAclClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
