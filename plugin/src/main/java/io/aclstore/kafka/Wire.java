package io.aclstore.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
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

/**
 * The sidecar API as the plugin speaks it: every path, request body and answer field the plugin
 * uses is named here and nowhere else (the contract: {@code replicator/contract/}, served as
 * {@code /openapi.json}; {@code tests/plugin/test_plugin_wire.py} checks this class against it).
 * Kafka's ACL types go to JSON and back as the contract's {@code bindings.py} has them: enum
 * constants by name, the resource name as {@code resourceName}, a filter's "any" as null.
 */
final class Wire {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

    static final String READYZ = "readyz";
    static final String STATUS = "v1/status";
    static final String AUTHORIZE = "v1/authorize";
    static final String AUTHORIZE_BY_RESOURCE_TYPE = "v1/authorize-by-resource-type";
    static final String OFFSET_WAIT = "v1/offset/wait";
    static final String CREATE_ACLS = "v1/acls";
    static final String DELETE_ACLS = "v1/acls/delete";
    static final String DESCRIBE_ACLS = "v1/acls/describe";

    /**
     * Operations the store's model has. A newer Kafka operation (TWO_PHASE_COMMIT, KIP-939) is
     * not asked about: no ACL in the store can grant it, so it is denied to all but super users.
     */
    static final Set<AclOperation> DECIDABLE_OPERATIONS = EnumSet.of(
            AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DELETE,
            AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
            AclOperation.IDEMPOTENT_WRITE, AclOperation.CREATE_TOKENS,
            AclOperation.DESCRIBE_TOKENS);

    static final Set<ResourceType> DECIDABLE_TYPES = EnumSet.of(
            ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
            ResourceType.TRANSACTIONAL_ID, ResourceType.DELEGATION_TOKEN, ResourceType.USER);

    private Wire() {
    }

    static boolean decidable(AclOperation operation, ResourceType type) {
        return DECIDABLE_OPERATIONS.contains(operation) && DECIDABLE_TYPES.contains(type);
    }

    // --- requests -------------------------------------------------------------------------------

    /** {@code /v1/authorize}: the actions (each of {@link #action}) of one principal. */
    static ObjectNode authorizeRequest(String principal, String host, ArrayNode actions) {
        ObjectNode body = JSON.objectNode();
        body.put("principal", principal);
        body.put("host", host);
        body.set("actions", actions);
        return body;
    }

    /** {@code /v1/authorize-by-resource-type} (KIP-679). */
    static ObjectNode byResourceTypeRequest(String principal, String host, AclOperation operation,
                                            ResourceType type) {
        ObjectNode body = JSON.objectNode();
        body.put("principal", principal);
        body.put("host", host);
        body.put("operation", operation.name());
        body.put("resourceType", type.name());
        return body;
    }

    /**
     * {@code /v1/offset/wait}: answer once the applied offset is above {@code after}. With a
     * {@code subscriber} (else null) the poll holds a lease of {@code leaseMs} (0 ends it).
     */
    static ObjectNode offsetWaitRequest(long after, long timeoutMs, String subscriber, long leaseMs) {
        ObjectNode body = JSON.objectNode();
        body.put("after", after);
        body.put("timeoutMs", timeoutMs);
        if (subscriber != null) {
            body.put("subscriber", subscriber);
            body.put("leaseMs", leaseMs);
        }
        return body;
    }

    /** The Kafka client an admin request is made for (the store records it as the actor). */
    static ObjectNode onBehalfOf(String principal, String host) {
        ObjectNode actor = JSON.objectNode();
        actor.put("principal", principal);
        actor.put("host", host);
        return actor;
    }

    static ObjectNode createAclsRequest(List<AclBinding> bindings, ObjectNode onBehalfOf) {
        ObjectNode body = JSON.objectNode();
        ArrayNode items = body.putArray("bindings");
        bindings.forEach(b -> items.add(binding(b)));
        body.set("onBehalfOf", onBehalfOf);
        return body;
    }

    static ObjectNode deleteAclsRequest(List<AclBindingFilter> filters, ObjectNode onBehalfOf) {
        ObjectNode body = JSON.objectNode();
        ArrayNode items = body.putArray("filters");
        filters.forEach(f -> items.add(filter(f)));
        body.set("onBehalfOf", onBehalfOf);
        return body;
    }

    static ObjectNode describeAclsRequest(AclBindingFilter filter) {
        ObjectNode body = JSON.objectNode();
        body.set("filter", filter(filter));
        return body;
    }

    static ObjectNode action(Action action) {
        ResourcePattern pattern = action.resourcePattern();
        ObjectNode node = JSON.objectNode();
        node.put("operation", action.operation().name());
        node.put("resourceType", pattern.resourceType().name());
        node.put("resourceName", pattern.name());
        node.put("logIfAllowed", action.logIfAllowed());
        node.put("logIfDenied", action.logIfDenied());
        return node;
    }

    static ObjectNode binding(AclBinding binding) {
        ResourcePattern pattern = binding.pattern();
        AccessControlEntry entry = binding.entry();
        return aclFields(pattern.resourceType(), pattern.name(), pattern.patternType(),
                entry.principal(), entry.host(), entry.operation(), entry.permissionType());
    }

    static ObjectNode filter(AclBindingFilter filter) {
        ResourcePatternFilter pattern = filter.patternFilter();
        AccessControlEntryFilter entry = filter.entryFilter();
        return aclFields(pattern.resourceType(), pattern.name(), pattern.patternType(),
                entry.principal(), entry.host(), entry.operation(), entry.permissionType());
    }

    /** The seven fields of a binding or a filter as the API names them (null: any). */
    private static ObjectNode aclFields(ResourceType resourceType, String name, PatternType patternType,
            String principal, String host, AclOperation operation, AclPermissionType permission) {
        ObjectNode node = JSON.objectNode();
        node.put("resourceType", resourceType.name());
        node.put("resourceName", name);
        node.put("patternType", patternType.name());
        node.put("principal", principal);
        node.put("host", host);
        node.put("operation", operation.name());
        node.put("permissionType", permission.name());
        return node;
    }

    // --- answers --------------------------------------------------------------------------------

    /** The per-item results of an authorize, CreateAcls or DeleteAcls answer. */
    static JsonNode results(JsonNode answer) {
        return answer.path("results");
    }

    /** The result of an authorize-by-resource-type answer. */
    static JsonNode result(JsonNode answer) {
        return answer.path("result");
    }

    static boolean allowed(JsonNode result) {
        return "ALLOWED".equals(result.asText());
    }

    /** The log offset an answer reflects, or {@code otherwise}. */
    static long offset(JsonNode answer, long otherwise) {
        return answer.path("offset").asLong(otherwise);
    }

    /** Whether the replica that answered an offset wait is ready. */
    static boolean ready(JsonNode answer) {
        return answer.path("ready").asBoolean(false);
    }

    /** A per-item result's error: an object, or null (missing) when the item succeeded. */
    static JsonNode itemError(JsonNode result) {
        return result.path("error");
    }

    /** The bindings a DeleteAcls result deleted (each for {@link #bindingFrom}). */
    static JsonNode deleted(JsonNode result) {
        return result.path("deleted");
    }

    /** The bindings of a DescribeAcls answer (each for {@link #bindingFrom}). */
    static JsonNode bindings(JsonNode answer) {
        return answer.path("bindings");
    }

    /** The number of bindings in a {@code /v1/status} answer, or -1. */
    static int bindingCount(JsonNode status) {
        return status.path("bindings").asInt(-1);
    }

    /** An error body's (or item error's) message, or {@code otherwise}. */
    static String errorMessage(JsonNode error, String otherwise) {
        return error.path("message").asText(otherwise);
    }

    /** An error body's Kafka error code ({@code Errors}), or null. */
    static Integer kafkaErrorCode(JsonNode error) {
        return error.hasNonNull("kafkaErrorCode") ? error.get("kafkaErrorCode").asInt() : null;
    }

    /** An error body's error class, or "". */
    static String errorName(JsonNode error) {
        return error.path("error").asText("");
    }

    static AclBinding bindingFrom(JsonNode node) {
        ResourcePattern pattern = new ResourcePattern(
                ResourceType.fromString(node.path("resourceType").asText()),
                node.path("resourceName").asText(),
                PatternType.fromString(node.path("patternType").asText()));
        AccessControlEntry entry = new AccessControlEntry(
                node.path("principal").asText(),
                node.path("host").asText(),
                AclOperation.fromString(node.path("operation").asText()),
                AclPermissionType.fromString(node.path("permissionType").asText()));
        return new AclBinding(pattern, entry);
    }
}
