/*
 * Loads the aclstore authorizer plugin the way a Kafka broker does (configure, then Kafka's own
 * Plugin.wrapInstance with the broker's Metrics registry, which hands a Monitorable plugin its
 * PluginMetrics) and asks it for decisions while no sidecar listens at its URL.
 *
 *   java PluginMetricsHarness URL [KEY=VALUE...]
 *       prints one JSON object: the results for User:alice (three actions) and User:admin
 *       (two actions), and every metric of the "plugins" group with its tags and value.
 *   java PluginMetricsHarness hung URL
 *       three decisions in a row against a sidecar that never answers: each result and its
 *       time in ms, as a JSON array.
 *   java PluginMetricsHarness lease URL [KEY=VALUE...]
 *       starts the plugin (its decision cache's long-poll included) against a live sidecar,
 *       then answers each line "ask" on stdin with User:alice's WRITE on topic orders:
 *       {"result": ..., "hits": decision-cache-hits-total, "calls": sidecar-calls-total,
 *        "misses": decision-cache-misses-total}.
 *   java PluginMetricsHarness reject KEY VALUE
 *       configures the plugin with one more setting and prints the ConfigException's message
 *       (or "accepted").
 */

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.aclstore.kafka.AclstoreAuthorizer;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.InetAddress;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.ClusterResource;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.internals.Plugin;
import org.apache.kafka.common.metrics.KafkaMetric;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.apache.kafka.server.authorizer.Authorizer;
import org.apache.kafka.server.authorizer.AuthorizerServerInfo;

public class PluginMetricsHarness {
    static AuthorizableRequestContext context(String user) throws Exception {
        InetAddress address = InetAddress.getByName("127.0.0.1");
        return new AuthorizableRequestContext() {
            public String listenerName() { return "SASL"; }
            public SecurityProtocol securityProtocol() { return SecurityProtocol.SASL_PLAINTEXT; }
            public KafkaPrincipal principal() { return new KafkaPrincipal("User", user); }
            public InetAddress clientAddress() { return address; }
            public int requestType() { return 0; }
            public int requestVersion() { return 9; }
            public String clientId() { return "harness"; }
            public int correlationId() { return 1; }
        };
    }

    static Action action(AclOperation op, String topic) {
        return new Action(op, new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
                1, true, true);
    }

    public static void main(String[] args) throws Exception {
        ObjectMapper mapper = new ObjectMapper();
        Map<String, Object> configs = new HashMap<>();
        configs.put("super.users", "User:admin");
        configs.put("aclstore.request.timeout.ms", "500");
        if (args[0].equals("reject")) {
            configs.put(args[1], args[2]);
            try {
                new AclstoreAuthorizer().configure(configs);
                System.out.println("accepted");
            } catch (ConfigException e) {
                System.out.println(e.getMessage());
            }
            return;
        }
        if (args[0].equals("hung")) {
            // a sidecar that accepts connections and never answers: the first call waits for
            // the request timeout, the next ones within aclstore.ready.poll.ms fail at once.
            configs.put("aclstore.url", args[1]);
            configs.put("aclstore.ready.poll.ms", "2000");
            AclstoreAuthorizer authorizer = new AclstoreAuthorizer();
            authorizer.configure(configs);
            ArrayNode calls = mapper.createArrayNode();
            for (int i = 0; i < 3; i++) {
                long started = System.nanoTime();
                List<AuthorizationResult> r = authorizer.authorize(context("alice"),
                        List.of(action(AclOperation.WRITE, "orders")));
                calls.addObject().put("result", r.get(0).name())
                        .put("ms", (System.nanoTime() - started) / 1_000_000);
            }
            authorizer.close();
            System.out.println(mapper.writeValueAsString(calls));
            return;
        }
        boolean lease = args[0].equals("lease");
        int first = lease ? 1 : 0;
        configs.put("aclstore.url", args[first]);
        for (int i = first + 1; i < args.length; i++) {  // more settings, KEY=VALUE
            String[] kv = args[i].split("=", 2);
            configs.put(kv[0], kv[1]);
        }
        Metrics metrics = new Metrics();
        AclstoreAuthorizer authorizer = new AclstoreAuthorizer();
        authorizer.configure(configs);
        Plugin<Authorizer> plugin =
                Plugin.wrapInstance(authorizer, metrics, "authorizer.class.name", "role", "broker");
        if (lease) {
            lease(mapper, plugin.get(), metrics);
            plugin.close();
            metrics.close();
            return;
        }
        ObjectNode out = mapper.createObjectNode();
        List<AuthorizationResult> alice = plugin.get().authorize(context("alice"), List.of(
                action(AclOperation.WRITE, "orders"), action(AclOperation.DESCRIBE, "orders"),
                action(AclOperation.READ, "payments")));
        List<AuthorizationResult> admin = plugin.get().authorize(context("admin"), List.of(
                action(AclOperation.WRITE, "orders"), action(AclOperation.ALTER, "orders")));
        ArrayNode a = out.putArray("alice");
        alice.forEach(r -> a.add(r.name()));
        ArrayNode b = out.putArray("admin");
        admin.forEach(r -> b.add(r.name()));
        out.put("byResourceType", plugin.get().authorizeByResourceType(
                context("alice"), AclOperation.WRITE, ResourceType.TOPIC).name());
        ArrayNode found = out.putArray("metrics");
        for (Map.Entry<MetricName, KafkaMetric> e : metrics.metrics().entrySet()) {
            if (!e.getKey().group().equals("plugins")) {
                continue;
            }
            ObjectNode m = found.addObject();
            m.put("name", e.getKey().name());
            m.set("tags", mapper.valueToTree(e.getKey().tags()));
            m.put("value", ((Number) e.getValue().metricValue()).doubleValue());
        }
        plugin.close();
        metrics.close();
        System.out.println(mapper.writeValueAsString(out));
    }

    static double metric(Metrics metrics, String name) {
        for (Map.Entry<MetricName, KafkaMetric> e : metrics.metrics().entrySet()) {
            if (e.getKey().group().equals("plugins") && e.getKey().name().equals(name)) {
                return ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        return -1;
    }

    static void lease(ObjectMapper mapper, Authorizer authorizer, Metrics metrics)
            throws Exception {
        authorizer.start(new AuthorizerServerInfo() {
            public ClusterResource clusterResource() { return new ClusterResource("c"); }
            public int brokerId() { return 1; }
            public Collection<Endpoint> endpoints() { return List.of(); }
            public Endpoint interBrokerEndpoint() { return null; }
            public Collection<String> earlyStartListeners() { return List.of(); }
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        System.out.println("{\"started\": true}");
        System.out.flush();
        for (String line = in.readLine(); line != null && line.equals("ask"); line = in.readLine()) {
            AuthorizationResult r = authorizer.authorize(context("alice"),
                    List.of(action(AclOperation.WRITE, "orders"))).get(0);
            ObjectNode out = mapper.createObjectNode();
            out.put("result", r.name());
            out.put("hits", metric(metrics, "decision-cache-hits-total"));
            out.put("calls", metric(metrics, "sidecar-calls-total"));
            out.put("misses", metric(metrics, "decision-cache-misses-total"));
            System.out.println(mapper.writeValueAsString(out));
            System.out.flush();
        }
    }
}
