"""A draining server answers the request in hand and no other (a stopping decision worker).

Real sockets on loopback: connections are handed to the server as the node hands them to a
worker (``bind=False``, :meth:`SidecarHTTPServer.process_request`)."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time

import pytest

from replicator.server.http import HttpRequest, Response, Route, SidecarHTTPServer

pytestmark = pytest.mark.unit


def handed(server: SidecarHTTPServer, listener: socket.socket) -> http.client.HTTPConnection:
    """A client connection whose server end is handed to ``server``."""
    client = http.client.HTTPConnection("127.0.0.1", listener.getsockname()[1], timeout=10)
    client.connect()
    accepted, address = listener.accept()
    server.process_request(accepted, address)
    return client


def test_the_request_in_hand_is_answered_and_no_other() -> None:
    entered, release = threading.Event(), threading.Event()

    def slow(request: HttpRequest) -> Response:
        entered.set()
        assert release.wait(10)
        return Response.json({"answered": request.path})

    routes = [Route("GET", "/slow", "slow", slow), Route("GET", "/fast", "fast", lambda r: Response.json({}))]
    server = SidecarHTTPServer(("127.0.0.1", 0), routes, bind=False)
    with socket.create_server(("127.0.0.1", 0)) as listener:
        idle = handed(server, listener)
        idle.request("GET", "/fast")
        assert idle.getresponse().read() == b"{}"  # kept alive, now waiting for its next request
        busy = handed(server, listener)
        busy.request("GET", "/slow")
        assert entered.wait(10)
        assert server.open_connections == 2

        drained: list[bool] = []
        drainer = threading.Thread(target=lambda: drained.append(server.drain(10)))
        drainer.start()
        deadline = time.monotonic() + 10
        while server.open_connections > 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert server.open_connections == 1  # the idle one is closed at once, the busy one not
        release.set()
        response = busy.getresponse()
        assert (response.status, json.loads(response.read())) == (200, {"answered": "/slow"})
        drainer.join(10)
        assert drained == [True] and server.open_connections == 0
        for client in (idle, busy):  # neither serves another request
            with pytest.raises((http.client.HTTPException, OSError)):
                client.request("GET", "/fast")
                client.getresponse()
        late = handed(server, listener)  # handed over after the drain: closed unanswered
        with pytest.raises((http.client.HTTPException, OSError)):
            late.request("GET", "/fast")
            late.getresponse()
        assert server.open_connections == 0
    server.server_close()
