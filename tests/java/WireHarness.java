/*
 * The broker plugin's Wire (plugin/src/main/java/io/aclstore/kafka/Wire.java) run on sample
 * values, for tests/plugin/test_plugin_wire.py to check against the contract (openapi.json and
 * the server's own parsers). In Wire's package: Wire is package-private.
 *
 *   java io.aclstore.kafka.WireHarness < answers.json
 *       stdin: {"authorize": ..., "byResourceType": [...], "offsetWait": ..., "createAcls": ...,
 *               "deleteAcls": ..., "describeAcls": ..., "status": ..., "error": ...}, answers as
 *               the node writes them.
 *       stdout: one JSON object:
 *         "paths":    Wire's path constants, by name;
 *         "requests": each request Wire writes, as {"body": the JSON, "made of": the Kafka
 *                     values it was made from, read with Kafka's getters};
 *         "read":     what Wire read from each answer on stdin.
 */
package io.aclstore.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.server.authorizer.Action;

public class WireHarness {
    static final ObjectMapper MAPPER = new ObjectMapper();
    static final String PRINCIPAL = "User:alice";
    static final String HOST = "10.0.0.1";

    public static void main(String[] args) throws Exception {
        JsonNode answers = MAPPER.readTree(System.in);
        ObjectNode out = MAPPER.createObjectNode();
        out.set("paths", paths());
        ObjectNode requests = out.putObject("requests");
        requests.set("authorize", authorizeRequests());
        requests.set("byResourceType", byResourceTypeRequests());
        requests.set("offsetWait", offsetWaitRequests());
        List<AclBinding> bindings = bindings();
        List<AclBindingFilter> filters = filters();
        requests.set("createAcls", arrayOf(made(
                Wire.createAclsRequest(bindings, Wire.onBehalfOf(PRINCIPAL, HOST)),
                madeOf(bindings.stream().map(WireHarness::fields).toList()))));
        requests.set("deleteAcls", arrayOf(made(
                Wire.deleteAclsRequest(filters, Wire.onBehalfOf(PRINCIPAL, HOST)),
                madeOf(filters.stream().map(WireHarness::fields).toList()))));
        ArrayNode describes = MAPPER.createArrayNode();
        for (AclBindingFilter filter : filters) {
            describes.add(made(Wire.describeAclsRequest(filter), fields(filter)));
        }
        requests.set("describeAcls", describes);
        out.set("read", read(answers));
        System.out.println(MAPPER.writeValueAsString(out));
    }

    /** Every static String of Wire: its paths, read by reflection (javac inlines constants). */
    static ObjectNode paths() throws IllegalAccessException {
        ObjectNode out = MAPPER.createObjectNode();
        for (Field field : Wire.class.getDeclaredFields()) {
            if (Modifier.isStatic(field.getModifiers()) && field.getType() == String.class) {
                out.put(field.getName(), (String) field.get(null));
            }
        }
        return out;
    }

    static ObjectNode made(JsonNode body, JsonNode madeOf) {
        ObjectNode out = MAPPER.createObjectNode();
        out.set("body", body);
        out.set("made of", madeOf);
        return out;
    }

    static ArrayNode arrayOf(JsonNode... items) {
        ArrayNode out = MAPPER.createArrayNode();
        for (JsonNode item : items) {
            out.add(item);
        }
        return out;
    }

    static ArrayNode madeOf(List<? extends JsonNode> items) {
        ArrayNode out = MAPPER.createArrayNode();
        items.forEach(out::add);
        return out;
    }

    /** Every action Wire asks about (each decidable operation and type), its flags both ways. */
    static ArrayNode authorizeRequests() {
        ArrayNode items = MAPPER.createArrayNode();
        ArrayNode madeOf = MAPPER.createArrayNode();
        int i = 0;
        for (AclOperation operation : Wire.DECIDABLE_OPERATIONS) {
            for (ResourceType type : Wire.DECIDABLE_TYPES) {
                boolean logIfAllowed = i % 2 == 0;
                boolean logIfDenied = i % 3 != 0;
                Action action = new Action(operation,
                        new ResourcePattern(type, "name-" + i, PatternType.LITERAL), 1,
                        logIfAllowed, logIfDenied);
                items.add(Wire.action(action));
                madeOf.add(MAPPER.createArrayNode().add(operation.name()).add(type.name())
                        .add("name-" + i).add(logIfAllowed).add(logIfDenied));
                i++;
            }
        }
        ObjectNode made = MAPPER.createObjectNode().put("principal", PRINCIPAL).put("host", HOST);
        made.set("actions", madeOf);
        return arrayOf(made(Wire.authorizeRequest(PRINCIPAL, HOST, items), made));
    }

    static ArrayNode byResourceTypeRequests() {
        ArrayNode out = MAPPER.createArrayNode();
        for (AclOperation operation : Wire.DECIDABLE_OPERATIONS) {
            for (ResourceType type : Wire.DECIDABLE_TYPES) {
                out.add(made(Wire.byResourceTypeRequest(PRINCIPAL, HOST, operation, type),
                        MAPPER.createArrayNode().add(PRINCIPAL).add(HOST).add(operation.name())
                                .add(type.name())));
            }
        }
        return out;
    }

    /** As the plugin's long-poll sends them: leased, not leased, and the lease's release. */
    static ArrayNode offsetWaitRequests() {
        return arrayOf(
                made(Wire.offsetWaitRequest(41, 400, "cache-1", 1000),
                        MAPPER.createArrayNode().add(41).add(400).add("cache-1").add(1000)),
                made(Wire.offsetWaitRequest(-1, 0, null, 1000),
                        MAPPER.createArrayNode().add(-1).add(0).addNull().add(0)),
                made(Wire.offsetWaitRequest(-1, 0, "cache-1", 0),
                        MAPPER.createArrayNode().add(-1).add(0).add("cache-1").add(0)));
    }

    /** A binding for every constant of each of Kafka's enums but UNKNOWN (and those a binding
     *  cannot have: ANY, MATCH), the other fields fixed. */
    static List<AclBinding> bindings() {
        List<AclBinding> out = new ArrayList<>();
        for (ResourceType type : ResourceType.values()) {
            add(out, type, PatternType.LITERAL, AclOperation.READ, AclPermissionType.ALLOW);
        }
        for (PatternType pattern : PatternType.values()) {
            add(out, ResourceType.TOPIC, pattern, AclOperation.READ, AclPermissionType.ALLOW);
        }
        for (AclOperation operation : AclOperation.values()) {
            add(out, ResourceType.TOPIC, PatternType.PREFIXED, operation, AclPermissionType.DENY);
        }
        for (AclPermissionType permission : AclPermissionType.values()) {
            add(out, ResourceType.GROUP, PatternType.LITERAL, AclOperation.ALL, permission);
        }
        return out;
    }

    static void add(List<AclBinding> out, ResourceType type, PatternType pattern,
                    AclOperation operation, AclPermissionType permission) {
        if (type == ResourceType.UNKNOWN || pattern == PatternType.UNKNOWN
                || operation == AclOperation.UNKNOWN || permission == AclPermissionType.UNKNOWN) {
            return;
        }
        try {
            String name = type == ResourceType.CLUSTER ? "kafka-cluster" : "orders";
            out.add(new AclBinding(new ResourcePattern(type, name, pattern),
                    new AccessControlEntry("User:bob", "*", operation, permission)));
        } catch (IllegalArgumentException e) {
            // ANY or MATCH: not a binding Kafka lets anyone build
        }
    }

    /** A filter for every constant of each enum but UNKNOWN, and the "any" filter (nulls). */
    static List<AclBindingFilter> filters() {
        List<AclBindingFilter> out = new ArrayList<>();
        out.add(AclBindingFilter.ANY);
        for (ResourceType type : ResourceType.values()) {
            filter(out, type, "orders", PatternType.MATCH, AclOperation.ANY, AclPermissionType.ANY);
        }
        for (PatternType pattern : PatternType.values()) {
            filter(out, ResourceType.TOPIC, null, pattern, AclOperation.READ, AclPermissionType.ANY);
        }
        for (AclOperation operation : AclOperation.values()) {
            filter(out, ResourceType.ANY, "t", PatternType.ANY, operation, AclPermissionType.DENY);
        }
        for (AclPermissionType permission : AclPermissionType.values()) {
            filter(out, ResourceType.GROUP, "g", PatternType.LITERAL, AclOperation.ALL, permission);
        }
        return out;
    }

    static void filter(List<AclBindingFilter> out, ResourceType type, String name,
                       PatternType pattern, AclOperation operation, AclPermissionType permission) {
        if (type == ResourceType.UNKNOWN || pattern == PatternType.UNKNOWN
                || operation == AclOperation.UNKNOWN || permission == AclPermissionType.UNKNOWN) {
            return;
        }
        out.add(new AclBindingFilter(new ResourcePatternFilter(type, name, pattern),
                new AccessControlEntryFilter("User:bob", null, operation, permission)));
    }

    static ArrayNode fields(AclBinding b) {
        return MAPPER.createArrayNode().add(b.pattern().resourceType().name())
                .add(b.pattern().name()).add(b.pattern().patternType().name())
                .add(b.entry().principal()).add(b.entry().host())
                .add(b.entry().operation().name()).add(b.entry().permissionType().name());
    }

    static ArrayNode fields(AclBindingFilter f) {
        return MAPPER.createArrayNode().add(f.patternFilter().resourceType().name())
                .add(f.patternFilter().name()).add(f.patternFilter().patternType().name())
                .add(f.entryFilter().principal()).add(f.entryFilter().host())
                .add(f.entryFilter().operation().name())
                .add(f.entryFilter().permissionType().name());
    }

    /** What Wire reads from each answer, with Kafka's getters on what it built. */
    static ObjectNode read(JsonNode answers) {
        ObjectNode out = MAPPER.createObjectNode();
        JsonNode authorize = answers.path("authorize");
        ArrayNode allowed = out.putObject("authorize").putArray("allowed");
        Wire.results(authorize).forEach(r -> allowed.add(Wire.allowed(r)));
        ((ObjectNode) out.get("authorize")).put("offset", Wire.offset(authorize, -99));
        ArrayNode byType = out.putArray("byResourceType");
        answers.path("byResourceType").forEach(a -> byType.add(Wire.allowed(Wire.result(a))));
        JsonNode wait = answers.path("offsetWait");
        out.putObject("offsetWait").put("ready", Wire.ready(wait))
                .put("offset", Wire.offset(wait, -99));
        ArrayNode created = out.putArray("createAcls");
        Wire.results(answers.path("createAcls")).forEach(r -> created.add(itemError(r)));
        ArrayNode deleted = out.putArray("deleteAcls");
        Wire.results(answers.path("deleteAcls")).forEach(r -> {
            ObjectNode item = itemError(r);
            ArrayNode bindings = item.putArray("deleted");
            Wire.deleted(r).forEach(b -> bindings.add(fields(Wire.bindingFrom(b))));
            deleted.add(item);
        });
        ArrayNode described = out.putArray("describeAcls");
        Wire.bindings(answers.path("describeAcls"))
                .forEach(b -> described.add(fields(Wire.bindingFrom(b))));
        out.put("status", Wire.bindingCount(answers.path("status")));
        JsonNode error = answers.path("error");
        ObjectNode refused = out.putObject("error").put("error", Wire.errorName(error))
                .put("message", Wire.errorMessage(error, "?"));
        Integer code = Wire.kafkaErrorCode(error);
        if (code != null) {
            refused.put("kafkaErrorCode", code);
        }
        return out;
    }

    static ObjectNode itemError(JsonNode result) {
        JsonNode error = Wire.itemError(result);
        ObjectNode out = MAPPER.createObjectNode().put("failed", error.isObject());
        if (error.isObject()) {
            out.put("message", Wire.errorMessage(error, "?"));
            Integer code = Wire.kafkaErrorCode(error);
            if (code != null) {
                out.put("kafkaErrorCode", code);
            }
        }
        return out;
    }
}
