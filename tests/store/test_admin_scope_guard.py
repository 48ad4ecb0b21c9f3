"""The admin's optimistic concurrency for ``aclstore apply``: ``alter_acls`` with a scope and
``if_scope_unchanged_since`` writes nothing when another writer changed a binding in the scope
after that offset, and names the change, its actor and offset; changes outside the scope do not
stop it.  Two admins (two writers) over one log, on the embedded log and on a real Kafka topic."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.admin import AclAdmin
from store.desired import ResourcePrefix, Scope, ScopeChangedError
from store.errors import InvalidRequestError
from store.log import EmbeddedChangeLog, KafkaChangeLog, KafkaLogSettings
from store.log.base import ChangeLog

ADMIN, MALLORY = "User:admin", "User:mallory"
SCOPE = Scope(
    principals=frozenset({"User:app"}),
    resource_prefixes=frozenset({ResourcePrefix(ResourceType.TOPIC, "orders.")}),
)


def acl(name: str, principal: str = "User:app", op: AclOperation = AclOperation.READ) -> AclBinding:
    allow = AclPermissionType.ALLOW
    return AclBinding.of(ResourceType.TOPIC, name, PatternType.LITERAL, principal, "*", op, allow)


@pytest.fixture(params=["embedded", pytest.param("kafka", marks=pytest.mark.kafka)])
def two_admins(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], AclAdmin]]:
    """A factory of admins, each over its own handle on ONE fresh log (several writers)."""
    opened: list[ChangeLog] = []

    def make() -> AclAdmin:
        if request.param == "embedded":
            log: ChangeLog = EmbeddedChangeLog(tmp_path / "data")
        else:
            bootstrap = request.getfixturevalue("kafka_bootstrap")
            topic = getattr(make, "topic", None) or request.getfixturevalue("unique_topic")("guard")
            make.topic = topic  # type: ignore[attr-defined]
            log = KafkaChangeLog(bootstrap, topic, KafkaLogSettings())
        opened.append(log)
        admin = AclAdmin(log, super_users=[ADMIN, MALLORY], timeout=30)
        admin.sync(timeout=60)
        return admin

    yield make
    for log in opened:
        log.close()


def test_a_stale_plan_is_refused_naming_the_change_and_nothing_is_written(
    two_admins: Callable[[], AclAdmin],
) -> None:
    ci, other = two_admins(), two_admins()
    ci.create_acls([acl("orders.a")], actor=ADMIN)
    planned_at = ci.sync()
    # another writer changes the scope after the plan: a create by principal, a delete by prefix
    sneaked = other.create_acls([acl("payments", principal="User:app")], actor=MALLORY).offset
    end = other.sync()
    with pytest.raises(ScopeChangedError) as refused:
        ci.alter_acls(
            creates=[acl("orders.b")], deletes=[acl("orders.a").to_filter()], actor=ADMIN,
            scope=SCOPE, if_scope_unchanged_since=planned_at,
        )  # fmt: skip
    [change] = refused.value.changes
    assert change["actor"] == MALLORY and change["offset"] == sneaked and change["change"] == "created"
    assert "User:mallory" in refused.value.message and f"offset {sneaked}" in refused.value.message
    assert ci.sync() == end  # nothing written
    assert set(ci.state.bindings()) == {acl("orders.a"), acl("payments")}

    # planned again at the new offset, the same write goes through
    result = ci.alter_acls(
        creates=[acl("orders.b")], deletes=[acl("orders.a").to_filter()], actor=ADMIN,
        scope=SCOPE, if_scope_unchanged_since=end,
    )  # fmt: skip
    assert result.records_written == 2
    ci.sync()
    assert set(ci.state.bindings()) == {acl("orders.b"), acl("payments")}


def test_changes_outside_the_scope_do_not_stop_an_apply(two_admins: Callable[[], AclAdmin]) -> None:
    ci, other = two_admins(), two_admins()
    planned_at = ci.sync()
    other.create_acls([acl("billing", principal="User:bob")], actor=MALLORY)
    other.delete_acls([acl("billing", principal="User:bob").to_filter()], actor=MALLORY)
    result = ci.alter_acls(creates=[acl("orders.x")], actor=ADMIN, scope=SCOPE,
                           if_scope_unchanged_since=planned_at)  # fmt: skip
    assert result.records_written == 1


def test_of_two_applies_planned_at_one_offset_exactly_one_writes(two_admins: Callable[[], AclAdmin]) -> None:
    first, second = two_admins(), two_admins()
    planned_at = first.sync()
    second.sync()
    outcomes: list[str] = []

    def apply(admin: AclAdmin, name: str) -> None:
        try:
            admin.alter_acls(
                creates=[acl(name)], actor=ADMIN, scope=SCOPE, if_scope_unchanged_since=planned_at
            )
            outcomes.append("written")
        except ScopeChangedError:
            outcomes.append("refused")

    # Two admins over one log each hold only their own lock; the log is the referee: the
    # second to append reads the first's record when it checks, and refuses.  Run in turn to
    # make the order certain (a true race could have both check before either appends: that
    # is what one node's write lock prevents, tested through the node).
    apply(first, "orders.one")
    apply(second, "orders.two")
    assert outcomes == ["written", "refused"]
    assert {b.name for b in second.state.bindings()} == {"orders.one"}


def test_a_plan_from_beyond_the_log_end_is_refused(two_admins: Callable[[], AclAdmin]) -> None:
    admin = two_admins()
    with pytest.raises(InvalidRequestError, match="beyond this store's log end"):
        admin.alter_acls(creates=[acl("orders.x")], actor=ADMIN, scope=SCOPE, if_scope_unchanged_since=99)


def test_concurrent_guarded_writes_through_one_admin_are_serialised(tmp_path: Path) -> None:
    with EmbeddedChangeLog(tmp_path / "log") as log:
        admin = AclAdmin(log, super_users=[ADMIN])
        planned_at = admin.sync()
        results: list[bool] = []
        barrier = threading.Barrier(8)

        def apply(i: int) -> None:
            barrier.wait()
            try:
                admin.alter_acls(creates=[acl(f"orders.{i}")], actor=ADMIN, scope=SCOPE,
                                 if_scope_unchanged_since=planned_at)  # fmt: skip
                results.append(True)
            except ScopeChangedError:
                results.append(False)

        threads = [threading.Thread(target=apply, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(results) == [False] * 7 + [True]
        admin.sync()
        assert len(admin.state.bindings()) == 1


def test_a_setting_altered_after_the_plan_refuses_a_write_that_sets_it(
    two_admins: Callable[[], AclAdmin],
) -> None:
    """A restore sets ``super.users`` and ``allow.everyone.if.no.acl.found`` as they were; if
    another writer altered one of them after the plan, nothing is written, naming the change.
    A write that sets no setting, or another one, is not stopped by it."""
    ci, other = two_admins(), two_admins()
    ci.alter_configs({"super.users": "User:ops"}, actor=ADMIN)
    planned_at = ci.sync()
    sneaked = other.alter_configs({"allow.everyone.if.no.acl.found": "true"}, actor=MALLORY).offset
    end = other.sync()
    restore = {"super.users": None, "allow.everyone.if.no.acl.found": "false"}
    with pytest.raises(ScopeChangedError) as refused:
        ci.alter_acls(creates=[acl("orders.a")], configs=restore, actor=ADMIN, scope=SCOPE,
                      if_scope_unchanged_since=planned_at)  # fmt: skip
    [change] = refused.value.changes
    assert change == {"offset": sneaked, "change": "altered", "setting": "allow.everyone.if.no.acl.found",
                      "value": "true", "actor": MALLORY, "timeMs": change["timeMs"]}  # fmt: skip
    assert "setting allow.everyone.if.no.acl.found set to 'true' by User:mallory" in refused.value.message
    assert ci.sync() == end  # nothing written
    assert ci.state.configs == {"super.users": "User:ops", "allow.everyone.if.no.acl.found": "true"}

    # a write that sets only the other setting, or none, goes through
    ci.alter_acls(configs={"super.users": None}, actor=ADMIN, scope=SCOPE,
                  if_scope_unchanged_since=planned_at)  # fmt: skip
    ci.alter_acls(creates=[acl("orders.a")], actor=ADMIN, scope=SCOPE,
                  if_scope_unchanged_since=planned_at)  # fmt: skip
    ci.sync()
    assert set(ci.state.bindings()) == {acl("orders.a")} and "super.users" not in ci.state.configs
