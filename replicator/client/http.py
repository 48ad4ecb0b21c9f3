"""The HTTP client of the sidecar API: one keep-alive connection, typed requests and answers.

Used by the ``aclstore`` CLI (and handy in scripts).  Each method sends the contract's request
(:mod:`replicator.contract.requests`) and returns the contract's answer
(:mod:`replicator.contract.answers`), read and checked as the server wrote it: an answer that
does not follow the contract is a :class:`StoreClientError`, not a ``KeyError`` later.
:meth:`StoreClient.call` sends raw JSON, for probing the wire itself.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import ssl
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from replicator.client.config import ClientConfig
from replicator.contract import endpoints
from replicator.contract.access import (
    OFFSET_HEADER,
    SAFE_HEADER,
    AnalysisProgressAnswer,
    DowngradeCheckAnswer,
    DowngradeCheckRequest,
    DryRunAnswer,
    DryRunRequest,
)
from replicator.contract.answers import (
    AlterAclsAnswer,
    AlterConfigsAnswer,
    AuthorizeAnswer,
    ByResourceTypeAnswer,
    CreateAclsAnswer,
    DeleteAclsAnswer,
    DescribeAclsAnswer,
    DescribeConfigsAnswer,
    ErrorAnswer,
    OffsetWaitAnswer,
    ReplicaStatusAnswer,
    RequestCheckAnswer,
)
from replicator.contract.declare import Message
from replicator.contract.endpoints import Endpoint
from replicator.contract.fields import BadRequestError
from replicator.contract.listing import ListAclsRequest, ListedAcls, ListingError, ListingReader
from replicator.contract.requests import (
    AlterAclsRequest,
    AlterConfigsBody,
    AuthorizeRequest,
    ByResourceTypeRequest,
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
    DescribeConfigsRequest,
    OffsetWaitRequest,
    RequestCheckRequest,
)
from store.acl import ANY_FILTER, AclBinding, AclBindingFilter
from store.desired.scope import Scope
from store.errors import StoreError
from store.settings import FORMAT_VERSION_CONFIG

ANALYSIS_TIMEOUT_S = 1800.0
"""How long an access-diff question may take the node (a downgrade check walks every binding)."""

Q = TypeVar("Q", bound=Message)
A = TypeVar("A", bound=Message)


class StoreClientError(StoreError):
    """The store answered with an error, or could not be reached."""

    def __init__(self, message: str, *, status: int = 0, error: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.error = error

    @property
    def unreachable(self) -> bool:
        return self.status == 0


class StoreClient:
    """One keep-alive connection to a node; the contract's requests in, its answers out;
    errors as StoreClientError."""

    def __init__(self, config: ClientConfig) -> None:
        self.config = config
        split = urlsplit(config.url)
        self._https = split.scheme == "https"
        self._host = split.hostname or "127.0.0.1"
        self._port = split.port or (443 if self._https else 80)
        self._conn: http.client.HTTPConnection | None = None

    def _connection(self) -> http.client.HTTPConnection:
        if self._conn is None:
            if self._https:
                context = ssl.create_default_context(
                    cafile=str(self.config.ca_file) if self.config.ca_file else None
                )
                if self.config.cert_file is not None:
                    context.load_cert_chain(
                        str(self.config.cert_file),
                        str(self.config.key_file) if self.config.key_file else None,
                        self.config.key_password,
                    )
                self._conn = http.client.HTTPSConnection(
                    self._host, self._port, timeout=self.config.timeout_s, context=context
                )
            else:
                self._conn = http.client.HTTPConnection(
                    self._host, self._port, timeout=self.config.timeout_s
                )
        return self._conn

    def call(self, method: str, path: str, body: Any = None, *, timeout: float | None = None) -> Any:
        """Send raw JSON; return the decoded JSON answer of a 2xx, raise otherwise.
        ``timeout`` (s) replaces the configured one for this call (a long analysis)."""
        response, data = self._exchange(method, path, body, stream=False, timeout=timeout)
        content_type = response.getheader("Content-Type", "")
        decoded: Any = data.decode("utf-8", errors="replace")
        if content_type.startswith("application/json"):
            with contextlib.suppress(ValueError):
                decoded = json.loads(decoded)
        return decoded

    def _exchange(
        self, method: str, path: str, body: Any, *, stream: bool, timeout: float | None = None
    ) -> tuple[http.client.HTTPResponse, bytes]:
        """Send a request; the response and its body, or with ``stream`` the response of a 2xx
        with its body left to read.  A non-2xx raises StoreClientError with the node's error.
        ``timeout`` (s) replaces the configured one for this call."""
        payload = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Accept": "application/json"}
        if payload is not None:
            headers["Content-Type"] = "application/json"
        if self.config.token:
            headers["Authorization"] = f"Bearer {self.config.token}"
        for attempt in (1, 2):
            conn = self._connection()
            wait = self.config.timeout_s if timeout is None else timeout
            conn.timeout = wait
            if conn.sock is not None:
                conn.sock.settimeout(wait)
            try:
                conn.request(method, path, body=payload, headers=headers)
                response = conn.getresponse()
                if stream and 200 <= response.status < 300:
                    return response, b""
                data = response.read()
                break
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                self.close()  # a kept-alive connection the server closed: retry once
                if attempt == 2:
                    raise StoreClientError(
                        f"the store at {self.config.url} closed the connection"
                    ) from None
            except ssl.SSLError as exc:
                self.close()
                raise StoreClientError(
                    f"TLS with {self.config.url} failed: {exc.reason or exc}"
                ) from exc
            except OSError as exc:
                self.close()
                reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
                raise StoreClientError(
                    f"cannot reach the store at {self.config.url}: {reason} "
                    "(is `aclstore serve` running there? set --store or ACLSTORE_URL)"
                ) from exc
        if 200 <= response.status < 300:
            return response, data
        decoded: Any = data.decode("utf-8", errors="replace")
        if response.getheader("Content-Type", "").startswith("application/json"):
            with contextlib.suppress(ValueError):
                decoded = json.loads(decoded)
        try:
            refused = ErrorAnswer.from_json(decoded)
        except BadRequestError:  # not the node's error body (a proxy's page, say)
            message, error = f"HTTP {response.status} {response.reason}", ""
        else:
            message, error = refused.message, refused.error
        raise StoreClientError(message, status=response.status, error=error)

    def send(
        self, endpoint: Endpoint[Q, A], request: Q | None = None, *, timeout: float | None = None
    ) -> A:
        """Send ``request`` to ``endpoint``; its answer, read as the endpoint's answer type."""
        if endpoint.answer is None:
            raise TypeError(f"{endpoint.name} has no JSON answer: use call() or text()")
        body = None if request is None else request.to_json()
        answer = self.call(endpoint.method, endpoint.path, body, timeout=timeout)
        try:
            return endpoint.answer.from_json(answer)
        except BadRequestError as exc:
            raise StoreClientError(
                f"the answer of {self.config.url}{endpoint.path} does not follow the API "
                f"(is it an aclstore node of this version?): {exc.message}",
                status=200,
            ) from exc

    # --- decisions ----------------------------------------------------------------------------

    def authorize(self, request: AuthorizeRequest) -> AuthorizeAnswer:
        return self.send(endpoints.AUTHORIZE, request)

    def authorize_by_resource_type(self, request: ByResourceTypeRequest) -> ByResourceTypeAnswer:
        return self.send(endpoints.AUTHORIZE_BY_RESOURCE_TYPE, request)

    def authorize_request(self, request: RequestCheckRequest) -> RequestCheckAnswer:
        return self.send(endpoints.AUTHORIZE_REQUEST, request)

    def wait_offset(self, request: OffsetWaitRequest) -> OffsetWaitAnswer:
        return self.send(endpoints.WAIT_OFFSET, request)

    # --- ACL administration (KIP-140) ---------------------------------------------------------

    def create_acls(self, bindings: Sequence[AclBinding]) -> CreateAclsAnswer:
        return self.send(endpoints.CREATE_ACLS, CreateAclsRequest(items=list(bindings)))

    def describe_acls(
        self, acl_filter: AclBindingFilter = ANY_FILTER, *, min_offset: int | None = None
    ) -> DescribeAclsAnswer:
        request = DescribeAclsRequest(acl_filter=acl_filter, min_offset=min_offset)
        return self.send(endpoints.DESCRIBE_ACLS, request)

    def list_acls(
        self, filters: Sequence[AclBindingFilter] = (ANY_FILTER,), *, min_offset: int | None = None,
        scope: Scope | None = None,
    ) -> AclListing:  # fmt: skip
        """DescribeAcls of the union of ``filters``, streamed (``/v1/acls/list``): iterate the
        answer for its resources as they arrive, in DescribeAcls order; its ``offset`` is set
        once the whole listing has been read.  A listing that fails midway raises
        StoreClientError from the iteration, never ends as a shorter one.  ``scope``: only the
        bindings in that desired-state scope (filtered on the node)."""
        request = ListAclsRequest(filters=list(filters), min_offset=min_offset, scope=scope)
        response, _ = self._exchange(
            endpoints.LIST_ACLS.method, endpoints.LIST_ACLS.path, request.to_json(), stream=True
        )
        return AclListing(self, response)

    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> DeleteAclsAnswer:
        return self.send(endpoints.DELETE_ACLS, DeleteAclsRequest(filters=list(filters)))

    def alter_acls(
        self,
        *,
        deletes: Sequence[AclBindingFilter] = (),
        creates: Sequence[AclBinding] = (),
        configs: Mapping[str, str | None] | None = None,
        scope: Scope | None = None,
        if_scope_unchanged_since: int | None = None,
        reference: str | None = None,
    ) -> AlterAclsAnswer:
        """Deletes, creates and settings written as one batch, at one offset; with ``scope``
        and ``if_scope_unchanged_since``, only if no binding in scope changed after that offset
        (else StoreClientError with status 409 naming each change)."""
        request = AlterAclsRequest(
            deletes=list(deletes), creates=list(creates), configs=dict(configs or {}),
            scope=scope, if_scope_unchanged_since=if_scope_unchanged_since, reference=reference,
        )
        return self.send(endpoints.ALTER_ACLS, request)

    def dry_run_acls(
        self, *, creates: Sequence[AclBinding] = (), deletes: Sequence[AclBindingFilter] = (),
        min_offset: int | None = None,
    ) -> DryRunAnswer:  # fmt: skip
        """The access creating ``creates`` and deleting with ``deletes`` would widen and
        narrow, judged by the node against its own state; nothing is written."""
        request = DryRunRequest(creates=list(creates), deletes=list(deletes), min_offset=min_offset)
        return self.send(endpoints.DRY_RUN, request, timeout=max(self.config.timeout_s, ANALYSIS_TIMEOUT_S))

    def downgrade_check(self, to: int, *, min_offset: int | None = None) -> DowngradeCheckAnswer:
        """What a replica of event format ``to`` (ignoring what it cannot read) would decide
        differently from the live state, judged by the node (a walk of every binding: waited
        for up to :data:`ANALYSIS_TIMEOUT_S`)."""
        request = DowngradeCheckRequest(to=to, min_offset=min_offset)
        wait = max(self.config.timeout_s, ANALYSIS_TIMEOUT_S)
        return self.send(endpoints.DOWNGRADE_CHECK, request, timeout=wait)

    def analysis_progress(self) -> AnalysisProgressAnswer:
        """How far the node's analysis walk (a downgrade check...) has got."""
        return self.send(endpoints.ANALYSIS_PROGRESS)

    def downgrade_check_body(self, to: int, *, min_offset: int | None = None) -> DowngradeBody:
        """:meth:`downgrade_check`'s answer as the node sends it: its verdict and offset (the
        node's headers), and its JSON text to read chunk by chunk, never parsed here (the
        CLI's ``--format json`` prints it as it comes)."""
        request = DowngradeCheckRequest(to=to, min_offset=min_offset)
        wait = max(self.config.timeout_s, ANALYSIS_TIMEOUT_S)
        endpoint = endpoints.DOWNGRADE_CHECK
        response, _ = self._exchange(endpoint.method, endpoint.path, request.to_json(), stream=True,
                                     timeout=wait)  # fmt: skip
        return DowngradeBody(self, response)

    # --- configs (KIP-133) and the node -------------------------------------------------------

    def describe_configs(self, names: Sequence[str] = ()) -> DescribeConfigsAnswer:
        """The store's settings (no names: every one)."""
        return self.send(endpoints.DESCRIBE_CONFIGS, DescribeConfigsRequest(names=list(names)))

    def alter_configs(
        self, configs: Mapping[str, str | None], *, validate_only: bool = False,
        force_reason: str | None = None,
    ) -> AlterConfigsAnswer:  # fmt: skip
        """Set settings (None resets one to its default); ``validate_only`` writes nothing."""
        request = AlterConfigsBody(
            configs=dict(configs), validate_only=validate_only, force_reason=force_reason
        )
        # lowering the format runs the node's gate, an access diff of every binding
        wait = max(self.config.timeout_s, ANALYSIS_TIMEOUT_S) if FORMAT_VERSION_CONFIG in configs else None
        return self.send(endpoints.ALTER_CONFIGS, request, timeout=wait)

    def status(self) -> ReplicaStatusAnswer:
        """The replica's figures (``/v1/status``)."""
        return self.send(endpoints.STATUS)

    def text(self, path: str) -> str:
        """GET a non-JSON resource (``/metrics``)."""
        answer = self.call("GET", path)
        return answer if isinstance(answer, str) else json.dumps(answer)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> StoreClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


_READ_BYTES = 64 * 1024


class DowngradeBody:
    """A downgrade check's answer being read (:meth:`StoreClient.downgrade_check_body`):
    :attr:`safe` and :attr:`offset` now, the body's text by iterating :meth:`chunks` once.
    A body cut short raises StoreClientError (never passes for a whole answer)."""

    def __init__(self, client: StoreClient, response: http.client.HTTPResponse) -> None:
        self._client, self._response = client, response
        safe, offset = response.getheader(SAFE_HEADER), response.getheader(OFFSET_HEADER)
        if safe not in ("true", "false") or offset is None or not offset.isdigit():
            client.close()
            raise StoreClientError(
                f"{client.config.url} answered a downgrade check without its {SAFE_HEADER} and "
                f"{OFFSET_HEADER} headers (is it an aclstore node of this version?)", status=200,
            )  # fmt: skip
        self.safe, self.offset = safe == "true", int(offset)

    def chunks(self) -> Iterator[bytes]:
        response = self._response
        expected = response.getheader("Content-Length")
        got = 0
        done = False
        try:
            while True:
                chunk = response.read1(_READ_BYTES)
                if not chunk:
                    break
                got += len(chunk)
                yield chunk
            done = expected is None or got == int(expected)
        except (http.client.HTTPException, OSError) as exc:
            raise StoreClientError(f"reading the downgrade check failed: {exc!r}", status=200) from exc
        finally:
            if not done:
                self._client.close()
        if not done:
            raise StoreClientError(
                f"the downgrade check's answer stopped after {got} of {expected} bytes", status=200
            )


class AclListing:
    """A streamed listing being read (:meth:`StoreClient.list_acls`).

    Iterate it once for the resources; :attr:`offset` (the log offset the listing reflects)
    and :attr:`bindings` are set by its end.  A listing left unread, or one that failed,
    closes the client's connection (the rest of its body is never read)."""

    def __init__(self, client: StoreClient, response: http.client.HTTPResponse) -> None:
        self._client = client
        self._response = response
        self._reader = ListingReader(self._chunks())

    @property
    def offset(self) -> int | None:
        return self._reader.offset

    @property
    def bindings(self) -> int | None:
        return self._reader.bindings

    def _chunks(self) -> Iterator[bytes]:
        response = self._response
        while True:
            try:
                chunk = response.read1(_READ_BYTES)
            except (http.client.HTTPException, OSError) as exc:
                raise ListingError(f"reading the listing failed: {exc!r}") from exc
            if not chunk:
                return
            yield chunk

    def __iter__(self) -> Iterator[ListedAcls]:
        done = False
        try:
            yield from self._reader
            done = True
        except ListingError as exc:
            url = self._client.config.url
            raise StoreClientError(
                f"listing the ACLs of {url} failed: {exc.message}", status=200, error=exc.error
            ) from exc
        finally:
            if not done:
                self._client.close()
