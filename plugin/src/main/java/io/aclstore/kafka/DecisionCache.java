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
 * does. Leased (the default), {@code bound} is the lease: the sidecar also announces a change
 * before it makes it visible and waits for the next long-poll (the acknowledgement) or the
 * lease's end, so no applied change is hidden at all. Denials are never cached: each reaches
 * the sidecar, which audits it.
 */
final class DecisionCache {
    record Key(String principal, String host, AclOperation operation, ResourceType type,
               String name) {
    }

    private record Entry(long offset, long bornNanos) {
    }

    static final long UNKNOWN = Long.MIN_VALUE;

    private final long boundNanos;
    private final long entryMaxAgeNanos;
    private final int maxEntries;
    private final ConcurrentHashMap<Key, Entry> entries = new ConcurrentHashMap<>();
    private volatile long offset = UNKNOWN;
    private volatile long confirmedNanos;

    /**
     * An entry answers for at most {@code entryMaxAgeMs}, then the sidecar is asked again: so
     * the sidecar sees every grant in use that often, and its audit (which records each
     * binding's first ALLOWED decision of every hour, whatever the allow sample) never reports
     * a grant in use as unused.
     */
    DecisionCache(long boundMs, long entryMaxAgeMs, int maxEntries) {
        this.boundNanos = boundMs * 1_000_000L;
        this.entryMaxAgeNanos = entryMaxAgeMs * 1_000_000L;
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
        return entry != null && entry.offset() == current
                && System.nanoTime() - entry.bornNanos() <= entryMaxAgeNanos;
    }

    /** Remember an ALLOWED answer the sidecar gave at {@code answerOffset}. */
    void putAllowed(Key key, long answerOffset) {
        if (answerOffset != offset) {
            return;  // older or newer than what the watcher knows: not provably current
        }
        if (entries.size() >= maxEntries) {
            entries.clear();
        }
        entries.put(key, new Entry(answerOffset, System.nanoTime()));
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
