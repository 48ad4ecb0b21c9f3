package io.aclstore.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;

/**
 * The sidecar's HTTP API over loopback (the contract: {@code replicator/contract/}, served as
 * {@code /openapi.json}). JSON bodies in and out; every failure is a {@link SidecarException}.
 */
final class SidecarClient implements AutoCloseable {
    private final BlockingHttp http;
    private final URI base;
    private final Duration timeout;
    private final Duration adminTimeout;
    private final PluginConfig config;
    private volatile String authorization;
    private final ObjectMapper mapper = new ObjectMapper();

    SidecarClient(PluginConfig config) {
        this.config = config;
        this.base = config.url();
        this.timeout = config.requestTimeout();
        this.adminTimeout = config.adminTimeout();
        this.authorization = config.bearerToken() == null ? null : "Bearer " + config.bearerToken();
        this.http = new BlockingHttp(base, config.requestTimeout(), config.tls());
    }

    ObjectMapper mapper() {
        return mapper;
    }

    URI base() {
        return base;
    }

    /** A decision endpoint: loopback callers need no credential. */
    JsonNode decide(String path, JsonNode body) throws SidecarException {
        return send("POST", path, body, null, timeout);
    }

    /** A decision endpoint that may take up to {@code wait} to answer (a long-poll). */
    JsonNode decide(String path, JsonNode body, Duration wait) throws SidecarException {
        return send("POST", path, body, null, timeout.plus(wait));
    }

    /** An admin endpoint: authenticated with the plugin's bearer token. */
    JsonNode admin(String path, JsonNode body) throws SidecarException {
        if (authorization == null) {
            String token;
            try {
                token = config.pendingBearerToken();
            } catch (RuntimeException e) {
                throw new SidecarException(e.getMessage(), false, 0, null, e);
            }
            if (token != null) {
                authorization = "Bearer " + token;
            }
        }
        if (authorization == null && config.pendingCommandConfig() != null) {
            throw new SidecarException("ACL administration through the broker waits for the "
                    + "sidecar's credential: " + config.pendingCommandConfig() + " ("
                    + PluginConfig.COMMAND_CONFIG + ") does not exist or holds no "
                    + PluginConfig.BEARER_TOKEN + " yet; the sidecar writes it on its first start",
                    false, 0, null, null);
        }
        if (authorization == null) {
            throw new SidecarException("ACL administration through the broker needs a credential "
                    + "for the sidecar: set " + PluginConfig.COMMAND_CONFIG + " (the node's "
                    + "admin.properties) or " + PluginConfig.BEARER_TOKEN, false, 0, null, null);
        }
        return send("POST", path, body, authorization, adminTimeout);
    }

    /** {@code GET path}. */
    JsonNode get(String path) throws SidecarException {
        return send("GET", path, null, null, timeout);
    }

    private JsonNode send(String method, String path, JsonNode body, String auth, Duration limit)
            throws SidecarException {
        String where = method + " " + base.resolve(path);
        byte[] bytes = null;
        if (body != null) {
            try {
                bytes = mapper.writeValueAsBytes(body);
            } catch (IOException e) {
                throw new SidecarException("cannot encode the request to " + where + ": " + e,
                        false, 0, null, e);
            }
        }
        BlockingHttp.Answer answer;
        try {
            answer = http.exchange(method, path, bytes, auth, limit);
        } catch (IOException e) {
            throw new SidecarException("the aclstore sidecar did not answer " + where + ": " + e,
                    true, 0, null, e);
        }
        int status = answer.status();
        JsonNode json;
        try {
            json = mapper.readTree(answer.body());
        } catch (IOException e) {
            throw new SidecarException(where + " answered " + status + " with a body that is not "
                    + "JSON: is " + base + " an aclstore sidecar?", status >= 500, status, null, e);
        }
        if (status == 200) {
            return json;
        }
        String message = Wire.errorMessage(json, "HTTP " + status);
        Integer code = Wire.kafkaErrorCode(json);
        throw new SidecarException("the aclstore sidecar refused " + where + " (" + status + " "
                + Wire.errorName(json) + "): " + message, status >= 500, status, code, null);
    }

    @Override
    public void close() {
        http.close();
    }
}
