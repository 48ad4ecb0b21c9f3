package io.aclstore.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.metrics.Gauge;
import org.apache.kafka.common.metrics.Monitorable;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.server.authorizer.AclCreateResult;
import org.apache.kafka.server.authorizer.AclDeleteResult;
import org.apache.kafka.server.authorizer.AclDeleteResult.AclBindingDeleteResult;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.apache.kafka.server.authorizer.Authorizer;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Kafka {@link Authorizer} that asks the aclstore sidecar on the same host.
 *
 * <p>Set {@code authorizer.class.name=io.aclstore.kafka.AclstoreAuthorizer}. Decisions go to the
 * sidecar's {@code /v1/authorize} (one batch per call, results in order) and
 * {@code /v1/authorize-by-resource-type} (KIP-679); ACL administration (KIP-140) goes to its
 * admin endpoints with the plugin's credential, on behalf of the Kafka caller's principal.
 *
 * <p><b>Fail closed.</b> When the sidecar cannot be asked (down, not ready, too slow) every
 * action of a principal outside this plugin's own {@code super.users} is DENIED, counted in the
 * {@code fail-closed-denials-total} plugin metric and logged. Super users are decided here, without
 * a call, so the controller listener and {@code admin} keep working while the sidecar is away.
 *
 * <p><b>Freshness.</b> ALLOWED answers are cached per applied log offset, and a long-poll on the
 * sidecar's {@code /v1/offset/wait} drops them when the offset moves. By default
 * ({@code aclstore.cache.max.staleness.ms=0}) the long-poll holds a lease
 * ({@code aclstore.cache.lease.ms}, 1 s): the sidecar announces each new offset to it and makes
 * the change visible only once the plugin acknowledged (dropped its older entries) or the lease
 * ran out, and the plugin stops using its cache when the lease runs out by its own clock. So
 * no change the sidecar has applied is ever answered from an older cached entry. With a
 * staleness bound above 0 the sidecar does not wait for the plugin and a change may stay hidden
 * up to that bound; see {@link DecisionCache}. {@code aclstore.cache.lease.ms=0} with the
 * default bound turns the cache off (every decision asks the sidecar, and is audited there).
 *
 * <p><b>Start.</b> As {@code StandardAuthorizer} does, early-start listeners (the controller
 * listener) are ready at once; the others once the sidecar answers {@code /readyz} with 200.
 */
public final class AclstoreAuthorizer implements Authorizer, Monitorable {
    private static final Logger LOG = LoggerFactory.getLogger(AclstoreAuthorizer.class);
    /** The logger Kafka's own authorizers write decisions to. */
    private static final Logger DECISIONS = LoggerFactory.getLogger("kafka.authorizer.logger");
    private static final long UNAVAILABLE_LOG_INTERVAL_MS = 10_000;

    private PluginConfig config;
    private SidecarClient sidecar;
    private final AtomicLong failClosedDenials = new AtomicLong();
    private final AtomicLong sidecarFailures = new AtomicLong();
    private final AtomicLong sidecarCalls = new AtomicLong();
    /** Nanoseconds request handler threads spent in decision calls (answered or not). */
    private final AtomicLong sidecarCallNanos = new AtomicLong();
    private volatile boolean sidecarAvailable = true;
    private volatile long lastUnavailableLogMs;
    /**
     * After a call went unanswered, calls fail closed at once until this time (System.nanoTime):
     * a hung sidecar must not hold every request handler thread for the request timeout.
     */
    private volatile long retryAfterNanos;
    private volatile boolean closed;
    private Thread readyWaiter;
    private DecisionCache cache;
    private Thread offsetWatcher;
    /** Names this cache's lease on the sidecar (one per authorizer instance). */
    private final String subscriber = "aclstore-authorizer-" + java.util.UUID.randomUUID();
    private final AtomicLong cacheHits = new AtomicLong();
    private final AtomicLong cacheMisses = new AtomicLong();
    static final int CACHE_MAX_ENTRIES = 100_000;

    @Override
    public void configure(Map<String, ?> configs) {
        config = PluginConfig.from(configs);
        sidecar = new SidecarClient(config);
        long window = config.cacheMaxStalenessMs() > 0
                ? config.cacheMaxStalenessMs() : config.cacheLeaseMs();
        cache = window > 0 ? new DecisionCache(window, config.cacheEntryMaxAgeMs(), CACHE_MAX_ENTRIES) : null;
        LOG.info("aclstore authorizer: sidecar {}, super users {}, admin credential {}",
                config.url(), config.superUsers(), config.bearerToken() != null ? "set"
                        : config.pendingCommandConfig() != null
                        ? "read from " + config.pendingCommandConfig() + " once it exists" : "none");
    }

    @Override
    public void withPluginMetrics(PluginMetrics metrics) {
        LinkedHashMap<String, String> tags = new LinkedHashMap<>();
        metrics.addMetric(metrics.metricName("fail-closed-denials-total",
                "Actions denied because the aclstore sidecar was unreachable or not ready", tags),
                (Gauge<Long>) (cfg, now) -> failClosedDenials.get());
        metrics.addMetric(metrics.metricName("sidecar-failures-total",
                "Calls to the aclstore sidecar that got no answer (down, not ready, timeout)", tags),
                (Gauge<Long>) (cfg, now) -> sidecarFailures.get());
        metrics.addMetric(metrics.metricName("sidecar-calls-total",
                "Calls to the aclstore sidecar", tags),
                (Gauge<Long>) (cfg, now) -> sidecarCalls.get());
        metrics.addMetric(metrics.metricName("sidecar-call-time-ns-total",
                "Nanoseconds request handler threads spent waiting for decision calls to the "
                + "aclstore sidecar, answered or not; divided by sidecar-calls-total, the mean "
                + "round trip", tags),
                (Gauge<Long>) (cfg, now) -> sidecarCallNanos.get());
        metrics.addMetric(metrics.metricName("sidecar-available",
                "1 when the last call to the aclstore sidecar was answered, else 0", tags),
                (Gauge<Integer>) (cfg, now) -> sidecarAvailable ? 1 : 0);
        metrics.addMetric(metrics.metricName("decision-cache-hits-total",
                "Actions answered from the decision cache without asking the sidecar", tags),
                (Gauge<Long>) (cfg, now) -> cacheHits.get());
        metrics.addMetric(metrics.metricName("decision-cache-misses-total",
                "Actions the decision cache did not answer: asked of the aclstore sidecar, or "
                        + "failed closed while it is away (every action when the cache is off); "
                        + "the hit rate is hits / (hits + misses)", tags),
                (Gauge<Long>) (cfg, now) -> cacheMisses.get());
    }

    // --- start ---------------------------------------------------------------------------------

    @Override
    public Map<Endpoint, ? extends CompletionStage<Void>> start(AuthorizerServerInfo serverInfo) {
        CompletableFuture<Void> ready = new CompletableFuture<>();
        Map<Endpoint, CompletableFuture<Void>> out = new HashMap<>();
        for (Endpoint endpoint : serverInfo.endpoints()) {
            boolean early = serverInfo.earlyStartListeners().contains(endpoint.listener());
            out.put(endpoint, early ? CompletableFuture.completedFuture(null) : ready);
        }
        if (cache != null && offsetWatcher == null) {
            offsetWatcher = new Thread(this::watchOffset,
                    "aclstore-authorizer-offset-" + serverInfo.brokerId());
            offsetWatcher.setDaemon(true);
            offsetWatcher.start();
        }
        if (out.values().stream().anyMatch(f -> f == ready)) {
            readyWaiter = new Thread(() -> waitForSidecar(ready),
                    "aclstore-authorizer-ready-" + serverInfo.brokerId());
            readyWaiter.setDaemon(true);
            readyWaiter.start();
        }
        return out;
    }

    private void waitForSidecar(CompletableFuture<Void> ready) {
        long started = System.currentTimeMillis();
        long lastLog = started;
        while (!closed) {
            String why;
            try {
                sidecar.get(Wire.READYZ);
                LOG.info("aclstore sidecar {} is ready: opening the broker's listeners",
                        config.url());
                ready.complete(null);
                return;
            } catch (SidecarException e) {
                why = e.getMessage();
            }
            long now = System.currentTimeMillis();
            if (now - lastLog >= UNAVAILABLE_LOG_INTERVAL_MS) {
                LOG.warn("waiting {} s for the aclstore sidecar to be ready before opening the "
                        + "broker's listeners: {}", (now - started) / 1000, why);
                lastLog = now;
            }
            try {
                Thread.sleep(config.readyPoll().toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /**
     * Keep a long-poll open on the sidecar's applied offset for the decision cache. Leased (the
     * default), each poll renews the lease and acknowledges the offset it names; answered, it
     * confirms the cache for one lease from when it was sent, so a lost or late answer only
     * shortens what the plugin believes. The poll is held for 2/5 of the window: renewed well
     * before it runs out.
     */
    private void watchOffset() {
        boolean leased = config.cacheMaxStalenessMs() == 0;
        long window = leased ? config.cacheLeaseMs() : config.cacheMaxStalenessMs();
        long poll = Math.max(1, Math.min(30_000, leased ? window * 2 / 5 : window / 2));
        java.time.Duration wait = java.time.Duration.ofMillis(poll);
        while (!closed) {
            long known = cache.offset();
            ObjectNode body = Wire.offsetWaitRequest(known == DecisionCache.UNKNOWN ? -1 : known,
                    known == DecisionCache.UNKNOWN ? 0 : poll, leased ? subscriber : null, window);
            long sent = System.nanoTime();
            try {
                JsonNode answer = sidecar.decide(Wire.OFFSET_WAIT, body, wait);
                if (Wire.ready(answer)) {
                    cache.confirmed(Wire.offset(answer, 0), sent);
                    continue;
                }
                cache.invalidate();
            } catch (SidecarException e) {
                cache.invalidate();
            }
            try {
                Thread.sleep(config.readyPoll().toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** Tell the sidecar this cache is gone, so it waits for it no more (best effort). */
    private void releaseLease() {
        ObjectNode body = Wire.offsetWaitRequest(-1, 0, subscriber, 0);
        try {
            sidecar.decide(Wire.OFFSET_WAIT, body);
        } catch (SidecarException e) {
            LOG.debug("could not release the decision cache's lease; it runs out by itself: {}",
                    e.getMessage());
        }
    }

    private static DecisionCache.Key key(String principal, String host, Action action) {
        return new DecisionCache.Key(principal, host, action.operation(),
                action.resourcePattern().resourceType(), action.resourcePattern().name());
    }

    // --- decisions -----------------------------------------------------------------------------

    @Override
    public List<AuthorizationResult> authorize(AuthorizableRequestContext context,
                                               List<Action> actions) {
        String principal = context.principal().toString();
        if (config.superUsers().contains(principal)) {
            return Collections.nCopies(actions.size(), AuthorizationResult.ALLOWED);
        }
        AuthorizationResult[] results = new AuthorizationResult[actions.size()];
        Arrays.fill(results, AuthorizationResult.DENIED);
        String host = context.clientAddress().getHostAddress();
        List<Integer> asked = new ArrayList<>(actions.size());
        ArrayNode items = sidecar.mapper().createArrayNode();
        for (int i = 0; i < actions.size(); i++) {
            Action action = actions.get(i);
            if (!Wire.decidable(action.operation(), action.resourcePattern().resourceType())) {
                continue;
            }
            if (cache != null && cache.allowed(key(principal, host, action))) {
                cacheHits.incrementAndGet();
                results[i] = AuthorizationResult.ALLOWED;
                continue;
            }
            asked.add(i);
            items.add(Wire.action(action));
        }
        if (asked.isEmpty()) {
            return Arrays.asList(results);
        }
        cacheMisses.addAndGet(asked.size());
        ObjectNode body = Wire.authorizeRequest(principal, host, items);
        JsonNode answer = call(Wire.AUTHORIZE, body, principal, actions.size());
        if (answer == null) {
            Arrays.fill(results, AuthorizationResult.DENIED);  // cached allows too: fail closed
            return Arrays.asList(results);
        }
        JsonNode answered = Wire.results(answer);
        if (answered.size() != asked.size()) {
            failClosed(principal, actions.size(), "the sidecar answered " + answered.size()
                    + " results for " + asked.size() + " actions");
            Arrays.fill(results, AuthorizationResult.DENIED);
            return Arrays.asList(results);
        }
        for (int j = 0; j < asked.size(); j++) {
            if (Wire.allowed(answered.get(j))) {
                int i = asked.get(j);
                results[i] = AuthorizationResult.ALLOWED;
                if (cache != null) {
                    cache.putAllowed(key(principal, host, actions.get(i)),
                            Wire.offset(answer, DecisionCache.UNKNOWN));
                }
            }
        }
        return Arrays.asList(results);
    }

    @Override
    public AuthorizationResult authorizeByResourceType(AuthorizableRequestContext context,
                                                       AclOperation op, ResourceType type) {
        String principal = context.principal().toString();
        if (config.superUsers().contains(principal)) {
            return AuthorizationResult.ALLOWED;
        }
        if (!Wire.decidable(op, type)) {
            return AuthorizationResult.DENIED;
        }
        ObjectNode body = Wire.byResourceTypeRequest(principal,
                context.clientAddress().getHostAddress(), op, type);
        JsonNode answer = call(Wire.AUTHORIZE_BY_RESOURCE_TYPE, body, principal, 1);
        if (answer == null) {
            return AuthorizationResult.DENIED;
        }
        return Wire.allowed(Wire.result(answer))
                ? AuthorizationResult.ALLOWED : AuthorizationResult.DENIED;
    }

    /** The sidecar's answer, or null after failing closed (counted and logged). */
    private JsonNode call(String path, JsonNode body, String principal, int actions) {
        long wait = retryAfterNanos - System.nanoTime();
        if (retryAfterNanos != 0 && wait > 0) {
            failClosed(principal, actions, "the sidecar did not answer the last call; next try in "
                    + (wait / 1_000_000 + 1) + " ms");
            return null;
        }
        sidecarCalls.incrementAndGet();
        long started = System.nanoTime();
        try {
            JsonNode answer = sidecar.decide(path, body);
            sidecarCallNanos.addAndGet(System.nanoTime() - started);
            retryAfterNanos = 0;
            if (!sidecarAvailable) {
                sidecarAvailable = true;
                LOG.info("the aclstore sidecar {} answers again; decisions are its own again "
                        + "({} actions failed closed since start)", config.url(),
                        failClosedDenials.get());
            }
            return answer;
        } catch (SidecarException e) {
            sidecarCallNanos.addAndGet(System.nanoTime() - started);
            if (e.unavailable()) {
                sidecarFailures.incrementAndGet();
                retryAfterNanos = System.nanoTime() + config.readyPoll().toNanos();
            }
            failClosed(principal, actions, e.getMessage());
            return null;
        }
    }

    private void failClosed(String principal, int actions, String why) {
        long total = failClosedDenials.addAndGet(actions);
        boolean wasAvailable = sidecarAvailable;
        sidecarAvailable = false;
        long now = System.currentTimeMillis();
        if (wasAvailable || now - lastUnavailableLogMs >= UNAVAILABLE_LOG_INTERVAL_MS) {
            lastUnavailableLogMs = now;
            LOG.warn("failing closed: denied {} action(s) of {} ({} denied so far) because {}",
                    actions, principal, total, why);
        }
        DECISIONS.debug("Principal = {} is Denied operation(s) ({} action(s)): aclstore sidecar "
                + "unavailable", principal, actions);
    }

    // --- ACL administration (KIP-140) ------------------------------------------------------------

    private static ObjectNode onBehalfOf(AuthorizableRequestContext context) {
        return Wire.onBehalfOf(context.principal().toString(),
                context.clientAddress().getHostAddress());
    }

    @Override
    public List<? extends CompletionStage<AclCreateResult>> createAcls(
            AuthorizableRequestContext context, List<AclBinding> bindings) {
        ObjectNode body = Wire.createAclsRequest(bindings, onBehalfOf(context));
        List<CompletableFuture<AclCreateResult>> out = new ArrayList<>(bindings.size());
        JsonNode answer;
        try {
            answer = sidecar.admin(Wire.CREATE_ACLS, body);
        } catch (SidecarException e) {
            LOG.warn("CreateAcls of {} failed: {}", context.principal(), e.getMessage());
            ApiException error = e.toApiException();
            bindings.forEach(b -> out.add(CompletableFuture.completedFuture(
                    new AclCreateResult(error))));
            return out;
        }
        JsonNode results = Wire.results(answer);
        for (int i = 0; i < bindings.size(); i++) {
            JsonNode error = Wire.itemError(results.path(i));
            AclCreateResult result = error.isObject()
                    ? new AclCreateResult(itemError(error))
                    : results.has(i) ? AclCreateResult.SUCCESS
                    : new AclCreateResult(new UnknownServerException(
                            "the sidecar gave no result for binding " + i));
            out.add(CompletableFuture.completedFuture(result));
        }
        return out;
    }

    @Override
    public List<? extends CompletionStage<AclDeleteResult>> deleteAcls(
            AuthorizableRequestContext context, List<AclBindingFilter> filters) {
        ObjectNode body = Wire.deleteAclsRequest(filters, onBehalfOf(context));
        List<CompletableFuture<AclDeleteResult>> out = new ArrayList<>(filters.size());
        JsonNode answer;
        try {
            answer = sidecar.admin(Wire.DELETE_ACLS, body);
        } catch (SidecarException e) {
            LOG.warn("DeleteAcls of {} failed: {}", context.principal(), e.getMessage());
            ApiException error = e.toApiException();
            filters.forEach(f -> out.add(CompletableFuture.completedFuture(
                    new AclDeleteResult(error))));
            return out;
        }
        JsonNode results = Wire.results(answer);
        for (int i = 0; i < filters.size(); i++) {
            JsonNode item = results.path(i);
            AclDeleteResult result;
            if (Wire.itemError(item).isObject()) {
                result = new AclDeleteResult(itemError(Wire.itemError(item)));
            } else if (!item.isObject()) {
                result = new AclDeleteResult(new UnknownServerException(
                        "the sidecar gave no result for filter " + i));
            } else {
                List<AclBindingDeleteResult> deleted = new ArrayList<>();
                Wire.deleted(item).forEach(b ->
                        deleted.add(new AclBindingDeleteResult(Wire.bindingFrom(b))));
                result = new AclDeleteResult(deleted);
            }
            out.add(CompletableFuture.completedFuture(result));
        }
        return out;
    }

    @Override
    public Iterable<AclBinding> acls(AclBindingFilter filter) {
        ObjectNode body = Wire.describeAclsRequest(filter);
        JsonNode answer;
        try {
            answer = sidecar.admin(Wire.DESCRIBE_ACLS, body);
        } catch (SidecarException e) {
            LOG.warn("DescribeAcls failed: {}", e.getMessage());
            throw e.toApiException();
        }
        List<AclBinding> out = new ArrayList<>();
        Wire.bindings(answer).forEach(b -> out.add(Wire.bindingFrom(b)));
        return out;
    }

    @Override
    public int aclCount() {
        try {
            return Wire.bindingCount(sidecar.get(Wire.STATUS));
        } catch (SidecarException e) {
            return -1;
        }
    }

    private static ApiException itemError(JsonNode error) {
        String message = Wire.errorMessage(error, "");
        Integer code = Wire.kafkaErrorCode(error);
        if (code != null) {
            return new SidecarException(message, false, 200, code, null).toApiException();
        }
        return new UnknownServerException(message);
    }

    @Override
    public void close() {
        closed = true;
        if (readyWaiter != null) {
            readyWaiter.interrupt();
        }
        if (offsetWatcher != null) {
            offsetWatcher.interrupt();
            if (config.cacheMaxStalenessMs() == 0) {
                releaseLease();
            }
        }
        if (sidecar != null) {
            sidecar.close();
        }
    }
}
