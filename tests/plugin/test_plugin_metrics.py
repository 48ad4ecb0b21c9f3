"""Fail closed, counted where a broker looks: the plugin loaded as Kafka loads an authorizer.

A Java harness (``tests/java/PluginMetricsHarness.java``) configures the plugin and wraps it
with Kafka's own ``Plugin.wrapInstance`` and ``Metrics``, exactly as a broker does, with no
sidecar listening at its URL.  The expected values are worked out by hand: three actions of
alice denied, one by-resource-type check denied, admin (a super user) allowed without a call.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest

from devtools.java import compile_harness, run_harness
from devtools.kafka_process import free_port
from devtools.maven import kafka_classpath
from devtools.plugin import plugin_jar

pytestmark = pytest.mark.unit

HARNESS = Path(__file__).resolve().parents[1] / "java" / "PluginMetricsHarness.java"


def _run(*args: str) -> str:
    classpath = [*kafka_classpath(), plugin_jar()]
    build = compile_harness(HARNESS, classpath)
    return run_harness(build, "PluginMetricsHarness", classpath, args=args, timeout=120)


def test_without_a_sidecar_everyone_but_super_users_is_denied_and_counted() -> None:
    out = json.loads(_run(f"http://127.0.0.1:{free_port()}"))
    assert out["alice"] == ["DENIED", "DENIED", "DENIED"]
    assert out["admin"] == ["ALLOWED", "ALLOWED"]
    assert out["byResourceType"] == "DENIED"
    values = {m["name"]: m["value"] for m in out["metrics"]}
    assert values["fail-closed-denials-total"] == 4  # 3 actions + 1 by-resource-type check
    # One call went unanswered; the by-resource-type check, right after it, failed closed
    # without another call (aclstore.ready.poll.ms); admin's actions never left the plugin.
    assert values["sidecar-failures-total"] == 1
    assert values["sidecar-calls-total"] == 1
    assert values["sidecar-available"] == 0
    for metric in out["metrics"]:  # the broker's tags for its authorizer plugin (KIP-877)
        assert metric["tags"] == {
            "config": "authorizer.class.name", "class": "AclstoreAuthorizer", "role": "broker"
        }


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("aclstore.urll", "http://127.0.0.1:9096", "unknown aclstore authorizer setting"),
        ("aclstore.url", "ftp://127.0.0.1", "use an http:// or https:// URL"),
        ("aclstore.request.timeout.ms", "0", "must be above 0 ms"),
        ("aclstore.cache.max.staleness.ms", "soon", "not a whole number of milliseconds"),
        ("super.users", "admin", "each super user is Type:name"),
        ("aclstore.command.config", "/nonexistent/admin.properties", "cannot read it"),
    ],
)
def test_a_setting_that_cannot_work_is_refused_at_configure(
    key: str, value: str, expected: str
) -> None:
    message = _run("reject", key, value)
    assert expected in message and key in message, message


def test_a_hung_sidecar_holds_one_call_for_the_timeout_and_the_next_ones_fail_at_once() -> None:
    with socket.socket() as hung:  # accepts connections (the kernel's backlog), never answers
        hung.bind(("127.0.0.1", 0))
        hung.listen(16)
        calls = json.loads(_run("hung", f"http://127.0.0.1:{hung.getsockname()[1]}"))
    assert [c["result"] for c in calls] == ["DENIED", "DENIED", "DENIED"]
    first, *rest = (c["ms"] for c in calls)
    assert 450 <= first <= 1500  # aclstore.request.timeout.ms=500
    assert all(ms < 100 for ms in rest), calls  # within aclstore.ready.poll.ms: no new call
