/*
 * Drives Apache Kafka's own KRaft authorizer (org.apache.kafka.metadata.authorizer.StandardAuthorizer)
 * for aclstore's differential test and benchmark.  Compiled at test time with javac against the
 * Kafka jars (see bench/authorizer.py: KafkaHarness).
 *
 *   java KafkaAuthorizerHarness cases FILE
 *       FILE holds one JSON scenario per line:
 *         {"super_users": [..], "allow_everyone": bool, "loading_complete": bool,
 *          "acls": [[rt, name, pattern, principal, host, op, permission], ..],
 *          "queries": [{"kind": "authorize"|"by_type", "principal": "User:x", "host": "1.2.3.4",
 *                       "op": "READ", "rt": "TOPIC", "name": "t", "guard": bool}, ..]}
 *       and prints one JSON array of answers per scenario: "ALLOWED", "DENIED",
 *       "THROW:<exception class>" or, for guarded queries still running after 500 ms, "TIMEOUT".
 *
 *   java KafkaAuthorizerHarness bench RESOURCES ACLS DENY_PERCENT SEED MEASURE_MS
 *       builds the AuthorizerBenchmark-shaped workload (deny choices from a shared
 *       splitmix64 so aclstore builds the very same ACLs), then times authorize and
 *       authorizeByResourceType after a warm-up and prints one JSON object.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;

import java.io.BufferedReader;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

public final class KafkaAuthorizerHarness {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final PrintStream OUT =
        new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true, StandardCharsets.UTF_8);

    /** The request context Kafka hands the authorizer: here only principal and address matter. */
    static final class Context implements AuthorizableRequestContext {
        private final KafkaPrincipal principal;
        private final InetAddress address;

        Context(KafkaPrincipal principal, InetAddress address) {
            this.principal = principal;
            this.address = address;
        }

        @Override public String listenerName() { return "PLAINTEXT"; }
        @Override public SecurityProtocol securityProtocol() { return SecurityProtocol.PLAINTEXT; }
        @Override public KafkaPrincipal principal() { return principal; }
        @Override public InetAddress clientAddress() { return address; }
        @Override public int requestType() { return 0; }  // PRODUCE, as AuthorizerBenchmark
        @Override public int requestVersion() { return 1; }
        @Override public String clientId() { return "aclstore-harness"; }
        @Override public int correlationId() { return 1; }
    }

    private static StandardAuthorizer newAuthorizer(Metrics metrics, String superUsers, boolean allowEveryone) {
        StandardAuthorizer authorizer = new StandardAuthorizer();
        authorizer.withPluginMetrics(new PluginMetricsImpl(metrics, Map.of("harness", "1")));
        Map<String, Object> configs = new HashMap<>();
        configs.put(StandardAuthorizer.SUPER_USERS_CONFIG, superUsers);
        configs.put(StandardAuthorizer.ALLOW_EVERYONE_IF_NO_ACL_IS_FOUND_CONFIG, Boolean.toString(allowEveryone));
        authorizer.configure(configs);
        return authorizer;
    }

    private static KafkaPrincipal principalOf(String text) {
        int colon = text.indexOf(':');
        return new KafkaPrincipal(text.substring(0, colon), text.substring(colon + 1));
    }

    // --- cases -------------------------------------------------------------------------------

    private static String answer(StandardAuthorizer authorizer, JsonNode query) throws Exception {
        Context context = new Context(principalOf(query.get("principal").asText()),
            InetAddress.getByName(query.get("host").asText()));
        AclOperation op = AclOperation.fromString(query.get("op").asText());
        ResourceType rt = ResourceType.fromString(query.get("rt").asText());
        try {
            AuthorizationResult result;
            if (query.get("kind").asText().equals("by_type")) {
                result = authorizer.authorizeByResourceType(context, op, rt);
            } else {
                ResourcePattern resource = new ResourcePattern(rt, query.get("name").asText(), PatternType.LITERAL);
                result = authorizer.authorize(context, List.of(new Action(op, resource, 1, true, true))).get(0);
            }
            return result.name();
        } catch (Throwable e) {
            return "THROW:" + e.getClass().getSimpleName();
        }
    }

    /** Runs a query that may hit Kafka's endless prefix scan on a thread we can abandon. */
    @SuppressWarnings({"deprecation", "removal"})
    private static String guarded(StandardAuthorizer authorizer, JsonNode query) throws Exception {
        String[] out = new String[1];
        Thread worker = new Thread(() -> {
            try {
                out[0] = answer(authorizer, query);
            } catch (Throwable e) {
                out[0] = "THROW:" + e.getClass().getSimpleName();
            }
        });
        worker.setDaemon(true);
        worker.start();
        worker.join(500);
        if (worker.isAlive()) {
            try {
                worker.stop();  // still works on Java 17; the thread only spins in checkSection
            } catch (UnsupportedOperationException ignored) {
                // newer JVMs: the daemon thread spins until the harness exits
            }
            return "TIMEOUT";
        }
        return out[0];
    }

    private static void cases(String file) throws Exception {
        try (BufferedReader reader = Files.newBufferedReader(Paths.get(file), StandardCharsets.UTF_8)) {
            String line;
            warmUp();
            while ((line = reader.readLine()) != null) {
                if (line.isBlank()) continue;
                JsonNode scenario = JSON.readTree(line);
                List<String> superUsers = new ArrayList<>();
                scenario.get("super_users").forEach(u -> superUsers.add(u.asText()));
                try (Metrics metrics = new Metrics()) {
                    StandardAuthorizer authorizer = newAuthorizer(metrics, String.join(";", superUsers),
                        scenario.get("allow_everyone").asBoolean());
                    Map<Uuid, StandardAcl> acls = new HashMap<>();
                    for (JsonNode acl : scenario.get("acls")) {
                        acls.put(Uuid.randomUuid(), new StandardAcl(
                            ResourceType.fromString(acl.get(0).asText()), acl.get(1).asText(),
                            PatternType.fromString(acl.get(2).asText()), acl.get(3).asText(), acl.get(4).asText(),
                            AclOperation.fromString(acl.get(5).asText()),
                            AclPermissionType.fromString(acl.get(6).asText())));
                    }
                    authorizer.loadSnapshot(acls);
                    if (scenario.get("loading_complete").asBoolean()) authorizer.completeInitialLoad();
                    List<String> answers = new ArrayList<>();
                    for (JsonNode query : scenario.get("queries")) {
                        boolean guard = query.has("guard") && query.get("guard").asBoolean();
                        answers.add(guard ? guarded(authorizer, query) : answer(authorizer, query));
                    }
                    OUT.println(JSON.writeValueAsString(answers));
                }
            }
        }
    }

    /**
     * Loads every class the decision paths use before any guarded query runs.  A guarded query
     * that is stopped while a class initializes leaves that class unusable for the whole JVM
     * (every later use throws NoClassDefFoundError), which on a loaded machine turned the
     * first slow-but-finite queries into false differences.
     */
    private static void warmUp() throws Exception {
        try (Metrics metrics = new Metrics()) {
            StandardAuthorizer authorizer = newAuthorizer(metrics, "User:root", true);
            Map<Uuid, StandardAcl> acls = new HashMap<>();
            acls.put(Uuid.randomUuid(), new StandardAcl(ResourceType.TOPIC, "w", PatternType.LITERAL,
                "User:w", "*", AclOperation.READ, AclPermissionType.ALLOW));
            acls.put(Uuid.randomUuid(), new StandardAcl(ResourceType.GROUP, "w", PatternType.PREFIXED,
                "User:*", "10.0.0.1", AclOperation.ALL, AclPermissionType.DENY));
            authorizer.loadSnapshot(acls);
            Context context = new Context(principalOf("User:w"), InetAddress.getByName("10.0.0.1"));
            try {
                authorizer.authorize(context, List.of(new Action(AclOperation.READ,
                    new ResourcePattern(ResourceType.TOPIC, "w", PatternType.LITERAL), 1, true, true)));
            } catch (Throwable notReadyYet) {
                // AuthorizerNotReadyException: its class is loaded now too.
            }
            authorizer.completeInitialLoad();
            for (ResourceType rt : ResourceType.values()) {
                if (rt == ResourceType.ANY || rt == ResourceType.UNKNOWN) continue;
                for (AclOperation op : AclOperation.values()) {
                    if (op == AclOperation.ANY || op == AclOperation.UNKNOWN) continue;
                    try {
                        authorizer.authorize(context, List.of(new Action(op,
                            new ResourcePattern(rt, "wx", PatternType.LITERAL), 1, true, true)));
                        authorizer.authorizeByResourceType(context, op, rt);
                    } catch (Throwable refused) {
                        // Kafka refuses some combinations; loading their classes is the point.
                    }
                }
            }
        }
    }

    // --- bench -------------------------------------------------------------------------------

    /** splitmix64: the deny choices, shared bit for bit with bench/authorizer.py. */
    static long mix(long z) {
        z += 0x9E3779B97F4A7C15L;
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    static boolean shouldDeny(long seed, long resource, long acl, double denyPercent) {
        long bits = mix(seed * 1_000_003L + resource * 65_537L + acl) >>> 11;
        return bits * 0x1.0p-53 * 100.0 < denyPercent;
    }

    static final String PREFIX = "foo-bar35_resource-";
    static final String PRINCIPAL = "User:test-user";

    private static void bench(int resources, int aclsPerResource, double denyPercent, long seed, long measureMs)
            throws Exception {
        long start = System.nanoTime();
        long heapBefore = usedHeap();
        Map<Uuid, StandardAcl> acls = new HashMap<>();
        for (int r = 0; r < resources; r++) {
            ResourceType rt = r % 10 == 0 ? ResourceType.GROUP : ResourceType.TOPIC;
            PatternType pt = r % 5 == 0 ? PatternType.PREFIXED : PatternType.LITERAL;
            String name = PREFIX + r;
            for (int a = 0; a < aclsPerResource; a++) {
                String principal = PRINCIPAL + (a == 0 ? "" : Integer.toString(a));
                acls.put(Uuid.randomUuid(), new StandardAcl(rt, name, pt, principal, "*", AclOperation.READ,
                    AclPermissionType.ALLOW));
                if (shouldDeny(seed, r, a, denyPercent)) {
                    acls.put(Uuid.randomUuid(), new StandardAcl(rt, name, pt, principal, "*", AclOperation.READ,
                        AclPermissionType.DENY));
                }
            }
        }
        for (int h = 0; h < 10; h++) {
            addBoth(acls, seed, -1, h, denyPercent, ResourceType.TOPIC, PREFIX, PatternType.PREFIXED, "127.0.0." + h);
        }
        for (int h = 0; h < resources / 10; h++) {
            String host = "127.0.0" + h;  // AuthorizerBenchmark's own (dot-less) host names
            if (host.equals("127.0.0.2")) continue;
            addBoth(acls, seed, -2, h, denyPercent, ResourceType.TOPIC, "*", PatternType.LITERAL, host);
        }
        Metrics metrics = new Metrics();
        StandardAuthorizer authorizer = newAuthorizer(metrics, "", false);
        authorizer.loadSnapshot(acls);
        authorizer.completeInitialLoad();
        int aclCount = acls.size();
        acls = null;
        double buildSeconds = (System.nanoTime() - start) / 1e9;
        long heapBytes = usedHeap() - heapBefore;

        Context authorizeContext = new Context(principalOf(PRINCIPAL), InetAddress.getByName("127.0.0.1"));
        Context byTypeContext = new Context(principalOf(PRINCIPAL), InetAddress.getByName("127.0.0.2"));
        List<Action> actions = List.of(new Action(AclOperation.WRITE,
            new ResourcePattern(ResourceType.TOPIC, PREFIX + 95, PatternType.LITERAL), 1, true, true));

        String authorizeResult = authorizer.authorize(authorizeContext, actions).get(0).name();
        String byTypeResult = authorizer.authorizeByResourceType(byTypeContext, AclOperation.READ, ResourceType.TOPIC).name();
        double authorizeRate = rate(measureMs, () -> authorizer.authorize(authorizeContext, actions).get(0).ordinal());
        double byTypeRate = rate(measureMs, () ->
            authorizer.authorizeByResourceType(byTypeContext, AclOperation.READ, ResourceType.TOPIC).ordinal());

        Map<String, Object> out = new HashMap<>();
        out.put("acls", aclCount);
        out.put("build_seconds", buildSeconds);
        out.put("heap_bytes", heapBytes);
        out.put("authorize_per_second", authorizeRate);
        out.put("authorize_result", authorizeResult);
        out.put("by_type_per_second", byTypeRate);
        out.put("by_type_result", byTypeResult);
        OUT.println(JSON.writeValueAsString(out));
    }

    private static void addBoth(Map<Uuid, StandardAcl> acls, long seed, long resource, int h, double denyPercent,
                                ResourceType rt, String name, PatternType pt, String host) {
        acls.put(Uuid.randomUuid(), new StandardAcl(rt, name, pt, PRINCIPAL, host, AclOperation.READ,
            AclPermissionType.ALLOW));
        if (shouldDeny(seed, resource, h, denyPercent)) {
            acls.put(Uuid.randomUuid(), new StandardAcl(rt, name, pt, PRINCIPAL, host, AclOperation.READ,
                AclPermissionType.DENY));
        }
    }

    interface Call {
        int run();
    }

    static volatile int sink;

    /** Calls per second: warm up for half of measureMs (JIT), then count calls for measureMs. */
    private static double rate(long measureMs, Call call) {
        long warmEnd = System.nanoTime() + measureMs * 500_000L;
        int acc = 0;
        while (System.nanoTime() < warmEnd) acc += call.run();
        long calls = 0;
        long begin = System.nanoTime();
        long end = begin + measureMs * 1_000_000L;
        long now;
        do {
            acc += call.run();
            calls++;
            now = System.nanoTime();
        } while (now < end || calls < 3);
        sink = acc;
        return calls / ((now - begin) / 1e9);
    }

    private static long usedHeap() {
        for (int i = 0; i < 3; i++) System.gc();
        Runtime rt = Runtime.getRuntime();
        return rt.totalMemory() - rt.freeMemory();
    }

    public static void main(String[] args) throws Exception {
        if (args.length == 2 && args[0].equals("cases")) {
            cases(args[1]);
        } else if (args.length == 6 && args[0].equals("bench")) {
            bench(Integer.parseInt(args[1]), Integer.parseInt(args[2]), Double.parseDouble(args[3]),
                Long.parseLong(args[4]), Long.parseLong(args[5]));
        } else {
            System.err.println("usage: KafkaAuthorizerHarness cases FILE | bench RESOURCES ACLS DENY% SEED MEASURE_MS");
            System.exit(2);
        }
    }
}
