"""ACL administration through a Kafka broker: kafka-acls.sh's ``--bootstrap-server`` path.

A broker whose authorizer is aclstore's plugin (``plugin/``) forwards CreateAcls, DescribeAcls
and DeleteAcls to the store, which records the Kafka caller as the actor.  This client speaks
those Kafka requests with confluent-kafka's AdminClient and answers with the store API's
answers (:mod:`replicator.contract.answers`), so that the CLI prints both paths alike.  Kafka's
protocol carries no log offset: ``offset`` is None on this path (and ``recordsWritten``
absent).

``--command-config`` on this path is a Kafka client properties file, as for kafka-acls.sh:
:func:`store.log.client_properties.librdkafka_config` turns the Java client's keys into
confluent-kafka's.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from replicator.contract.answers import (
    CreateAclsAnswer,
    CreateResult,
    DeleteAclsAnswer,
    DeleteResult,
    DescribeAclsAnswer,
    ItemError,
)
from replicator.contract.listing import ListedAcls, listed_acls
from store.acl import AclBinding, AclBindingFilter
from store.errors import InvalidRequestError
from store.interop import from_confluent, to_confluent, to_confluent_filter
from store.log.client_properties import librdkafka_config


def _item_error(exc: BaseException) -> ItemError:
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if error is not None and hasattr(error, "code"):
        return ItemError(error=error.name(), message=error.str(), kafka_error_code=error.code())
    return ItemError(error=type(exc).__name__, message=str(exc), kafka_error_code=-1)


class KafkaAclClient:
    """CreateAcls / DescribeAcls / DeleteAcls against a broker, answered as the store answers
    (:class:`~replicator.client.http.StoreClient`'s methods of the same names), with no
    offset."""

    def __init__(
        self, bootstrap_servers: str, properties: Mapping[str, str], *, timeout_s: float = 30.0
    ) -> None:
        config: dict[str, str | int | float | bool] = {**librdkafka_config(properties)}
        config["bootstrap.servers"] = bootstrap_servers
        self._admin = AdminClient(config)
        self._timeout = timeout_s

    def describe_acls(self, acl_filter: AclBindingFilter) -> DescribeAclsAnswer:
        future = self._admin.describe_acls(
            to_confluent_filter(acl_filter), request_timeout=self._timeout
        )
        try:
            found = future.result(timeout=self._timeout)
        except KafkaException as exc:
            raise InvalidRequestError(f"DescribeAcls failed: {_item_error(exc).message}") from exc
        return DescribeAclsAnswer(bindings=[from_confluent(b) for b in found], offset=None)

    def list_acls(self, filters: Sequence[AclBindingFilter]) -> DescribedListing:
        """The union of ``filters``' DescribeAcls answers as a listing's resources (Kafka's
        protocol has no streamed answer: each is read whole, as kafka-acls.sh reads it)."""
        found: dict[AclBinding, None] = {}
        for acl_filter in filters:
            found.update(dict.fromkeys(self.describe_acls(acl_filter).bindings))
        return DescribedListing(found)

    def create_acls(self, bindings: Sequence[AclBinding]) -> CreateAclsAnswer:
        futures = self._admin.create_acls(
            [to_confluent(b) for b in bindings], request_timeout=self._timeout
        )
        results = []
        for ours, ck in zip(bindings, futures, strict=True):
            try:
                futures[ck].result(timeout=self._timeout)
                error = None
            except KafkaException as exc:
                error = _item_error(exc)
            results.append(CreateResult(binding=ours, error=error))
        return CreateAclsAnswer(results=results, offset=None)

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> DeleteAclsAnswer:
        futures = self._admin.delete_acls(
            [to_confluent_filter(f) for f in filters], request_timeout=self._timeout
        )
        results = []
        for ours, ck in zip(filters, futures, strict=True):
            deleted: list[AclBinding] = []
            try:
                deleted = [from_confluent(b) for b in futures[ck].result(timeout=self._timeout)]
                error = None
            except KafkaException as exc:
                error = _item_error(exc)
            results.append(DeleteResult(filter=ours, deleted=deleted, error=error))
        return DeleteAclsAnswer(results=results, offset=None)

    def close(self) -> None:
        """AdminClient holds no connection to close explicitly; here for the ``with`` form."""

    def __enter__(self) -> KafkaAclClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class DescribedListing:
    """Bindings described whole, listed as :meth:`StoreClient.list_acls`'s answer is (no
    offset: Kafka's protocol carries none)."""

    offset: int | None = None

    def __init__(self, bindings: Iterable[AclBinding]) -> None:
        self._bindings = list(bindings)

    def __iter__(self) -> Iterator[ListedAcls]:
        return listed_acls(self._bindings)
