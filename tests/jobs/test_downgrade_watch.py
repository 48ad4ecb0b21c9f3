"""The downgrade watch: its incremental verdict against a full analysis after every event,
the alerts and the metric text (pure); then end to end on real Spark through the CLI: a
PREFIXED DENY under a wildcard ALLOW makes a downgrade to format 1 unsafe, deleting it makes it
safe again, and exactly two alerts land at the writes' offsets, none more on restarts (also
after a batch replayed as after a crash)."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

import cli
from jobs.common.events import ACL_CREATED, ACL_DELETED, CONFIG_ALTERED, HistoryEvent
from jobs.downgrade.watch import (
    TO_SAFE,
    TO_UNSAFE,
    Alert,
    LiveState,
    Verdict,
    last_safe,
    prometheus_text,
    transition,
    unsafe_since,
)
from store.acl import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType
from store.authorizer import Action, AuthorizerConfig, InMemoryAclIndex, authorize

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC = ResourceType.TOPIC

# KIP-290's hole (tests/replicator/sidecar_support.PREFIXED_DENY_UNDER_WILDCARD_ALLOW as bindings)
EVERYONE_READS = AclBinding.of(TOPIC, "*", LITERAL, "User:*", "*", AclOperation.READ, ALLOW)
BOB_DENIED = AclBinding.of(TOPIC, "secret-", PREFIXED, "User:bob", "*", AclOperation.READ, DENY)
PUBLIC = AclBinding.of(TOPIC, "public", LITERAL, "User:carol", "*", AclOperation.WRITE, ALLOW)


def _event(offset: int, kind: str, binding: AclBinding | None = None,
           name: str | None = None, value: str | None = None) -> HistoryEvent:  # fmt: skip
    return HistoryEvent(offset=offset, time_ms=1_000 + offset, type=kind, binding=binding,
                        config_name=name, config_value=value)  # fmt: skip


# --- pure ---------------------------------------------------------------------------------------


def _random_binding(rng: random.Random) -> AclBinding:
    pattern = rng.choice([LITERAL, LITERAL, PREFIXED])
    names = ["a", "ab", "abc", "b", "x"] + (["*"] if pattern is LITERAL else [])
    rt = rng.choice([TOPIC, TOPIC, ResourceType.GROUP, ResourceType.USER])
    op = AclOperation.CREATE_TOKENS if rt is ResourceType.USER else rng.choice(
        [AclOperation.READ, AclOperation.WRITE, AclOperation.ALL, AclOperation.DESCRIBE])  # fmt: skip
    return AclBinding.of(rt, rng.choice(names), pattern,
                         rng.choice(["User:*", "User:bob", "User:alice"]),
                         rng.choice(["*", "10.0.0.1"]), op, rng.choice([ALLOW, ALLOW, DENY]))  # fmt: skip


@pytest.mark.unit
@pytest.mark.parametrize("version", [1, 2])
def test_the_incremental_verdict_matches_a_fresh_analysis_after_every_event(version: int) -> None:
    """Skipping the analysis when nothing overlapping an ignored binding changed never hides
    a change: after each event, the kept verdict equals a fresh state's judged from scratch."""
    rng = random.Random(version)
    watch = LiveState(version)
    verdict: Verdict | None = None
    live: set[AclBinding] = set()
    settings: dict[str, str] = {}
    skipped = 0
    for offset in range(400):
        roll = rng.random()
        if roll < 0.08:
            name = rng.choice(["super.users", "allow.everyone.if.no.acl.found", "acl.format.version"])
            value = {"super.users": rng.choice([None, "User:bob", "User:alice"]),
                     "allow.everyone.if.no.acl.found": rng.choice([None, "true", "false"]),
                     "acl.format.version": "3"}[name]  # fmt: skip
            event = _event(offset, CONFIG_ALTERED, name=name, value=value)
            if value is None:
                settings.pop(name, None)
            else:
                settings[name] = value
        elif roll < 0.45 and live:
            gone = rng.choice(sorted(live))
            live.discard(gone)
            event = _event(offset, ACL_DELETED, gone)
        else:
            binding = _random_binding(rng)
            live.add(binding)
            event = _event(offset, ACL_CREATED, binding)
        watch.apply([event])
        skipped += not watch.may_have_changed
        verdict = watch.judge(offset, 1_000 + offset, verdict)
        fresh = LiveState(version, live, settings).judge(offset, 1_000 + offset)
        assert watch.bindings == live and watch.settings == settings
        assert (verdict.safe, verdict.widened, verdict.ignored) == (
            fresh.safe, fresh.widened, fresh.ignored), offset  # fmt: skip
    assert skipped > 20  # the shortcut is taken (else this test shows nothing about it)


@pytest.mark.unit
def test_kip_290_hole_alerts_on_the_way_in_and_out() -> None:
    watch = LiveState(1)
    safe = last_safe([])
    alerts: list[Alert] = []
    verdict = None
    for offset, event in enumerate([
        _event(0, ACL_CREATED, EVERYONE_READS),
        _event(1, ACL_CREATED, BOB_DENIED),
        _event(2, ACL_CREATED, PUBLIC),  # elsewhere: no analysis, no alert
        _event(3, ACL_DELETED, BOB_DENIED),
    ]):  # fmt: skip
        watch.apply([event])
        if offset == 2:
            assert not watch.may_have_changed
        verdict = watch.judge(offset, 1_000 + offset, verdict)
        alert = transition(safe, verdict)
        if alert is not None:
            alerts.append(alert)
            safe = alert.safe
        if offset == 2:
            assert unsafe_since(alerts) == alerts[0]
    assert [(a.offset, a.transition) for a in alerts] == [(1, TO_UNSAFE), (3, TO_SAFE)]
    assert unsafe_since(alerts) is None and last_safe(alerts)
    witness = alerts[0].witness
    assert witness is not None and alerts[0].widened == 1 and alerts[0].ignored == 1
    # the witness: denied by the rules on the state, allowed on it without the PREFIXED DENY
    # (a format-1 reader knows literal patterns only)
    action = [Action(witness.operation, witness.resource_type, witness.resource_name)]
    for bindings, expected in (([EVERYONE_READS, BOB_DENIED], False), ([EVERYONE_READS], True)):
        decision = authorize(InMemoryAclIndex(bindings), AuthorizerConfig(), witness.principal,
                             witness.host, action)[0]  # fmt: skip
        assert decision.allowed is expected


@pytest.mark.unit
def test_prometheus_text() -> None:
    verdict = Verdict(version=1, offset=7, time_ms=None, safe=False, widened=2, ignored=1)
    since = Alert(offset=5, time_ms=None, version=1, transition=TO_UNSAFE, widened=1, ignored=1)
    samples = [line for line in prometheus_text(verdict, since).splitlines() if not line.startswith("#")]
    assert samples == [
        'aclstore_downgrade_safe{to="1"} 0',
        'aclstore_downgrade_offset{to="1"} 7',
        'aclstore_downgrade_widened{to="1"} 2',
        'aclstore_downgrade_ignored_bindings{to="1"} 1',
        'aclstore_downgrade_unsafe_since_offset{to="1"} 5',
    ]
    text = prometheus_text(Verdict(version=2, offset=9, time_ms=None, safe=True, widened=0, ignored=0), None)
    assert '# TYPE aclstore_downgrade_safe gauge' in text
    assert 'aclstore_downgrade_safe{to="2"} 1' in text
    assert 'aclstore_downgrade_unsafe_since_offset{to="2"} -1' in text


# --- end to end on real Spark, through the CLI --------------------------------------------------


def _watch(capsys: pytest.CaptureFixture[str], where: list[str]) -> tuple[int, dict[str, object]]:
    code = cli.main(["downgrade-check", "--to", "1", "--watch", "--once", "--format", "json", *where])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return code, json.loads(out)


@pytest.mark.spark
def test_the_watch_alerts_exactly_on_transitions_and_resumes(
    spark: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from store.admin import AclAdmin
    from store.log import EmbeddedChangeLog

    data, location = tmp_path / "data", tmp_path / "watch"
    metrics = tmp_path / "textfile" / "aclstore_downgrade.prom"
    where = ["--data-dir", str(data), "--watch-location", str(location), "--metrics-file", str(metrics)]
    log = EmbeddedChangeLog(data / "log")
    admin = AclAdmin(log, super_users=["User:admin"])
    try:
        allowed_at = admin.create_acls([EVERYONE_READS], actor="User:admin").offset
        code, doc = _watch(capsys, where)
        assert (code, doc["safe"], doc["offset"], doc["alerts"]) == (0, True, allowed_at, [])

        denied_at = admin.create_acls([BOB_DENIED], actor="User:admin").offset
        code, doc = _watch(capsys, where)
        assert (code, doc["safe"], doc["offset"]) == (1, False, denied_at)
        [alert] = doc["alerts"]
        assert (alert["offset"], alert["transition"], alert["widened"]) == (denied_at, TO_UNSAFE, 1)
        assert doc["unsafeSince"] == alert
        witness = alert["witness"]
        assert (witness["principal"], witness["operation"]) == ("User:bob", "READ")
        assert witness["resourceName"].startswith("secret-")

        public_at = admin.create_acls([PUBLIC], actor="User:admin").offset  # elsewhere
        code, doc = _watch(capsys, where)
        assert (code, doc["offset"], len(doc["alerts"])) == (1, public_at, 1)
        assert doc["unsafeSince"]["offset"] == denied_at
        assert 'aclstore_downgrade_safe{to="1"} 0' in metrics.read_text()

        deleted_at = admin.delete_acls([BOB_DENIED.to_filter()], actor="User:admin").offset
        code, doc = _watch(capsys, where)
        assert (code, doc["safe"], doc["offset"], doc["unsafeSince"]) == (0, True, deleted_at, None)
        assert [(a["offset"], a["transition"]) for a in doc["alerts"]] == [
            (denied_at, TO_UNSAFE), (deleted_at, TO_SAFE)
        ]  # fmt: skip
        text = metrics.read_text()
        assert 'aclstore_downgrade_safe{to="1"} 1' in text
        assert f'aclstore_downgrade_offset{{to="1"}} {deleted_at}' in text
        assert 'aclstore_downgrade_unsafe_since_offset{to="1"} -1' in text
    finally:
        log.close()

    # a restart with nothing new adds nothing; nor does the last batch replayed as after a
    # crash before its commit (its Delta writes carry the batch id; the verdict before it
    # comes from the alerts table)
    code, doc = _watch(capsys, where)
    assert (code, len(doc["alerts"])) == (0, 2)
    commits = sorted((location / "_checkpoint" / "commits").iterdir(), key=lambda p: p.name)
    last = [p for p in commits if p.name.isdigit()][-1]
    last.unlink()
    (location / "_checkpoint" / "commits" / f".{last.name}.crc").unlink(missing_ok=True)
    code, doc = _watch(capsys, where)
    assert (code, doc["offset"], len(doc["alerts"])) == (0, deleted_at, 2)

    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    assert session is not None
    rows = session.read.format("delta").load(str(location / "alerts")).orderBy("offset").collect()
    assert [(r["offset"], r["transition"], r["toVersion"]) for r in rows] == [
        (denied_at, TO_UNSAFE, 1), (deleted_at, TO_SAFE, 1)
    ]  # fmt: skip


@pytest.mark.spark
def test_a_record_the_fold_refuses_stops_the_watch_typed_with_the_verdict_before_it(
    spark: object, tmp_path: Path
) -> None:
    """The watch decodes as the archive does: the common events on Spark's Avro reader, a
    corrupt record left to the fold, which refuses it; the verdict is the one just before it."""
    from jobs.common import LogSource
    from jobs.downgrade.job import DowngradeWatch, WatchStoppedError, run_watch
    from store.admin import AclAdmin
    from store.codec import AvroEventCodec, binding_key
    from store.events import AclCreated
    from store.log import EmbeddedChangeLog

    log = EmbeddedChangeLog(tmp_path / "data" / "log")
    admin = AclAdmin(log, super_users=["User:admin"])
    try:
        admin.create_acls([EVERYONE_READS], actor="User:admin")
        denied_at = admin.create_acls([BOB_DENIED], actor="User:admin").offset
        after = AvroEventCodec().encode(
            AclCreated(binding=PUBLIC, actor="User:admin", request_id="r", time_ms=1)
        )
        bad, _ = log.append([(binding_key(PUBLIC), b"\xc3\x01\x00\x01garbage"), (binding_key(PUBLIC), after)])
    finally:
        log.close()
    seen: list[DowngradeWatch] = []
    original = DowngradeWatch.each_batch

    def each_batch(watch: DowngradeWatch, batch: object, batch_id: int) -> None:
        seen.append(watch)
        original(watch, batch, batch_id)

    location = str(tmp_path / "watch")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DowngradeWatch, "each_batch", each_batch)
        with pytest.raises(WatchStoppedError, match=f"^the downgrade watch stopped at offset {bad}: "):
            run_watch(spark, LogSource.embedded(tmp_path / "data" / "log"), location,
                      f"{location}/_checkpoint", version=1, once=True)  # fmt: skip
    verdict = seen[-1].verdict
    assert verdict is not None and (verdict.offset, verdict.safe) == (bad - 1, False)
    assert bad == denied_at + 1


@pytest.mark.unit
def test_once_without_watch_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["downgrade-check", "--to", "1", "--once"]) == 2
    assert "--once goes with --watch" in capsys.readouterr().err


@pytest.mark.unit
def test_the_verdict_as_a_table(capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace

    from cli.downgrade_watch import print_verdict
    from store.access_diff import Request

    witness = Request("User:bob", "192.0.2.1", AclOperation.READ, TOPIC, "secret-")
    since = Alert(offset=1, time_ms=1_800_000_000_000, version=1, transition=TO_UNSAFE,
                  widened=1, ignored=1, witness=witness)  # fmt: skip
    verdict = Verdict(version=1, offset=4, time_ms=None, safe=False, widened=1, ignored=1,
                      witness=witness)  # fmt: skip
    print_verdict("table", SimpleNamespace(verdict=verdict, since=since, alerts=[since]))
    assert capsys.readouterr().out.splitlines() == [
        "Downgrade to event format v1: UNSAFE since offset 1 (2027-01-15T08:00:00.000Z): "
        "1 widened set(s), e.g. User:bob from 192.0.2.1: READ TOPIC 'secret-'",
        "alerts: 1",
        "  1  2027-01-15T08:00:00.000Z  safe->unsafe  widened 1",
        "(log offset 4)",
    ]
