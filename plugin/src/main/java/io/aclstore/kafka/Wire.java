package io.aclstore.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.EnumSet;
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
 * Kafka's ACL types to the sidecar's JSON and back (the contract's {@code bindings.py}: enum
 * constants by name, the resource name as {@code resourceName}, a filter's "any" as null).
 */
final class Wire {
    private static final JsonNodeFactory JSON = JsonNodeFactory.instance;

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
