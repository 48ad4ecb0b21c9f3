package io.aclstore.kafka;

import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;

/**
 * ALLOWED decisions the sidecar gave, each tagged with the applied log offset it reflects.
 *
 * <p>An entry answers only while (a) its offset is the sidecar's applied offset as the watcher
 * last heard it and (b) that was confirmed by a long-poll sent at most {@code bound} ago. A
 * change the sidecar applies wakes the long-poll at once (every entry then stops answering), and
 * a sidecar that stops confirming (down, hung) lets every entry expire within the bound: so no
 * change the sidecar has applied stays hidden for longer than the bound, whatever the network
 * does. Denials are never cached: each reaches the sidecar, which audits it.
 */
final class DecisionCache {
    record Key(String principal, String host, AclOperation operation, ResourceType type,
               String name) {
    }

    private record Entry(long offset) {
    }

    static final long UNKNOWN = Long.MIN_VALUE;

    private final long boundNanos;
    private final int maxEntries;
    private final ConcurrentHashMap<Key, Entry> entries = new ConcurrentHashMap<>();
    private volatile long offset = UNKNOWN;
    private volatile long confirmedNanos;

    DecisionCache(long boundMs, int maxEntries) {
        this.boundNanos = boundMs * 1_000_000L;
        this.maxEntries = maxEntries;
    }

    /** The applied offset the watcher last heard, or {@link #UNKNOWN}. */
    long offset() {
        return offset;
    }

    /** True when {@code key} was ALLOWED at the current offset, which is still confirmed. */
    boolean allowed(Key key) {
        long current = offset;
        if (current == UNKNOWN || System.nanoTime() - confirmedNanos > boundNanos) {
            return false;
        }
        Entry entry = entries.get(key);
        return entry != null && entry.offset() == current;
    }

    /** Remember an ALLOWED answer the sidecar gave at {@code answerOffset}. */
    void putAllowed(Key key, long answerOffset) {
        if (answerOffset != offset) {
            return;  // older or newer than what the watcher knows: not provably current
        }
        if (entries.size() >= maxEntries) {
            entries.clear();
        }
        entries.put(key, new Entry(answerOffset));
    }

    /**
     * A long-poll sent at {@code sentNanos} answered that the sidecar's applied offset is
     * {@code applied}: entries of another offset stop answering.
     */
    synchronized void confirmed(long applied, long sentNanos) {
        if (applied != offset) {
            entries.clear();
            offset = applied;
        }
        confirmedNanos = sentNanos;
    }

    /** The sidecar could not confirm anything: nothing answers until it does again. */
    synchronized void invalidate() {
        offset = UNKNOWN;
        entries.clear();
    }

    int size() {
        return entries.size();
    }
}
