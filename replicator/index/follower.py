"""A read-only follower of an index another process writes: what a decision worker reads.

The node's replica is the index's only writer.  A decision worker opens the same directory
as a RocksDB secondary instance (:func:`~replicator.index.tables.open_secondary`), which sees
nothing of the writer's commits until it calls ``try_catch_up_with_primary()`` and then sees
them whole: each commit is one ``WriteBatch`` holding the bindings, the applied offset and
the settings (:mod:`.meta`), so a caught-up follower is always exactly the log applied up to
the offset it reads beside them.

The follower keeps its own :class:`~replicator.index.cache.MatchCache` of answers.  To keep it
exact across a catch-up without emptying it, it reads the change journal the writer keeps in
the same batches (:func:`.meta.put_journal`): the patterns each commit changed, dropped from
the cache as the writer drops them from its own.  A follower further behind than the journal
reaches empties its cache instead.

After a catch-up it reads three keys, not the whole state: the head (position, counters and
anchor of the last commit), the journal's number and the shape sequence.  While the shape
sequence is the one of its last full read, nothing else it keeps can have changed (the writer
raises it with every setting, skip, stop, version and prefix length coming into or out of use);
otherwise it reads every key again.  The prefix lengths' counts it keeps are those of its last
full read: a follower uses only which lengths are in use.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import cast

from rocksdict import ReadOptions

from replicator.errors import IndexOpenError
from replicator.index import meta
from replicator.index.cache import DEFAULT_CACHE_MAX_BYTES, CachedAnswers, MatchCache, Pattern
from replicator.index.records import IndexCounters, IndexPosition, StopRecord
from replicator.index.tables import open_secondary
from replicator.index.view import IndexView


class FollowerIndex(CachedAnswers):
    """The index in ``path`` read through a secondary instance kept in ``secondary_path``.

    :meth:`catch_up` moves it to what the writer has committed; :meth:`view` reads the state
    of the last catch-up, paired with its position, as :meth:`AclIndex.view
    <replicator.index.acl_index.AclIndex.view>` does.  Thread-safe: one lock orders catch-ups,
    views and the cache.
    """

    def __init__(
        self,
        path: Path,
        secondary_path: Path,
        *,
        cache_size: int,
        cache_max_bytes: int = DEFAULT_CACHE_MAX_BYTES,
    ) -> None:
        self.path = path
        self._db, self.tables = open_secondary(path, secondary_path)
        self._lock = self._cache_lock = threading.Lock()
        self._cache = MatchCache(cache_size, cache_max_bytes)
        self._closed = False
        self._before_journal = ReadOptions()
        self._before_journal.set_iterate_upper_bound(meta.M_JOURNAL)
        self._stored = self._read_state()
        self.full_reads = 1
        """How many times it read every key of the state: at its opening, and at each catch-up
        that could not keep its last full read (the others read three keys)."""
        self._prefix_lengths = meta.freeze_lengths(self._stored.lengths)
        self._catch_ups = 0
        self._caught_up_at = time.monotonic()

    def _read_state(self) -> meta.StoredMeta:
        # Bounded above by the journal: the journal's pruned entries are tombstones until a
        # compaction, and an unbounded iterator walks past every one of them to find its end
        # (thousands after a few minutes of writes, milliseconds per catch-up).
        items = cast(Iterable[tuple[bytes, bytes]], self.tables.meta.items(read_opt=self._before_journal))
        stored = meta.read_state(items)
        if stored.layout != meta.INDEX_LAYOUT_VERSION:
            raise IndexOpenError(
                f"the index in {self.path} has layout {stored.layout}, not "
                f"{meta.INDEX_LAYOUT_VERSION}: a decision worker follows an index its node "
                "has opened (and upgraded) first"
            )
        return stored

    def _read_head(self) -> meta.StoredMeta | None:
        """The state from the head, if the shape sequence says the rest of the last full read
        still holds; None when every key must be read."""
        last = self._stored
        if last.shape < 0 or last.stopped is not None:
            return None
        head, journal_seq, shape = cast(
            list[bytes | None], self.tables.meta.get([meta.M_HEAD, meta.M_JOURNAL_SEQ, meta.M_SHAPE])
        )
        if head is None or meta.unpack_i64(shape, -1) != last.shape:
            return None
        position, counters, anchor = meta.decode_head(head)
        if anchor is None or position.offset < last.position.offset:
            return None  # a commit without an anchor (a skip), or not what this follower read
        return replace(
            last, position=position, counters=counters, anchor=anchor,
            journal_seq=meta.unpack_i64(journal_seq, 0),
        )  # fmt: skip

    # -- following the writer ------------------------------------------------------------------

    def catch_up(self) -> IndexPosition:
        """Read what the writer has committed since the last catch-up; the position reached."""
        with self._lock:
            self._check_open()
            self._db.try_catch_up_with_primary()
            stored = self._read_head()
            if stored is None:
                stored = self._read_state()
                self.full_reads += 1
            old_seq, new_seq = self._stored.journal_seq, stored.journal_seq
            if new_seq != old_seq:
                self._advance_cache(old_seq, new_seq)
            if stored.lengths != self._stored.lengths:
                self._prefix_lengths = meta.freeze_lengths(stored.lengths)
            self._stored = stored
            self._catch_ups += 1
            self._caught_up_at = time.monotonic()
            return stored.position

    def _advance_cache(self, old_seq: int, new_seq: int) -> None:
        """Drop the cached answers the commits ``old_seq + 1 .. new_seq`` can affect, one
        generation per commit; all of them when the journal no longer holds one."""
        if new_seq < old_seq or new_seq - old_seq > meta.JOURNAL_KEPT:
            self._cache.advance(None)
            return
        if new_seq == old_seq + 1:  # the common case: one get, no iterator
            entry: bytes | None = self.tables.meta.get(meta.M_JOURNAL + meta.pack_i64(new_seq))
            self._cache.advance(None if entry is None else meta.decode_journal(entry)[1])
            return
        start = meta.M_JOURNAL + meta.pack_i64(old_seq + 1)
        through = ReadOptions()
        through.set_iterate_upper_bound(meta.M_JOURNAL + meta.pack_i64(new_seq + 1))
        found: list[list[Pattern] | None] = []
        entries = self.tables.meta.items(from_key=start, read_opt=through)
        for key, value in cast(Iterable[tuple[bytes, bytes]], entries):
            if not key.startswith(meta.M_JOURNAL):
                break
            if meta.unpack_i64(key[len(meta.M_JOURNAL) :], 0) > new_seq:
                break
            found.append(meta.decode_journal(value)[1])
        if len(found) != new_seq - old_seq:  # pruned past us: the journal cannot say
            self._cache.advance(None)
            return
        for patterns in found:
            self._cache.advance(patterns)

    # -- reading -------------------------------------------------------------------------------

    @property
    def position(self) -> IndexPosition:
        return self._stored.position

    @property
    def counters(self) -> IndexCounters:
        return self._stored.counters

    @property
    def stopped(self) -> StopRecord | None:
        return self._stored.stopped

    @property
    def config(self) -> Mapping[str, str]:
        return dict(self._stored.config)

    @property
    def catch_ups(self) -> int:
        return self._catch_ups

    @property
    def caught_up_at(self) -> float:
        """When (``time.monotonic()``) the follower last caught up (or opened)."""
        return self._caught_up_at

    def view(self) -> IndexView:
        """A consistent read of the last catch-up, with the position it reflects."""
        with self._lock:
            self._check_open()
            stored = self._stored
            return IndexView(
                self,
                iterator=self.tables.acl.iter(),
                position=stored.position,
                config=stored.config,
                generation=self._cache.generation,
                prefix_lengths=self._prefix_lengths,
            )

    # -- closing -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise IndexOpenError(f"the follower of the index in {self.path} is closed")

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._cache.clear()
            del self.tables
            self._db.close()
            gc.collect()
