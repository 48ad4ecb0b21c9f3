package io.aclstore.kafka;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/**
 * The sidecar's HTTP API over loopback (the contract: {@code replicator/contract/}, served as
 * {@code /openapi.json}). JSON bodies in and out; every failure is a {@link SidecarException}.
 */
final class SidecarClient {
    private final HttpClient http;
    private final URI base;
    private final Duration timeout;
    private final String bearerToken;
    private final ObjectMapper mapper = new ObjectMapper();

    SidecarClient(PluginConfig config) {
        this.base = config.url();
        this.timeout = config.requestTimeout();
        this.bearerToken = config.bearerToken();
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(config.requestTimeout())
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    ObjectMapper mapper() {
        return mapper;
    }

    URI base() {
        return base;
    }

    /** A decision endpoint: loopback callers need no credential. */
    JsonNode decide(String path, JsonNode body) throws SidecarException {
        return send(post(path, body, null, timeout), null);
    }

    /** A decision endpoint that may take up to {@code wait} to answer (a long-poll). */
    JsonNode decide(String path, JsonNode body, Duration wait) throws SidecarException {
        return send(post(path, body, null, timeout.plus(wait)), null);
    }

    /** An admin endpoint: authenticated with the plugin's bearer token. */
    JsonNode admin(String path, JsonNode body) throws SidecarException {
        if (bearerToken == null) {
            throw new SidecarException("ACL administration through the broker needs a credential "
                    + "for the sidecar: set " + PluginConfig.COMMAND_CONFIG + " (the node's "
                    + "admin.properties) or " + PluginConfig.BEARER_TOKEN, false, 0, null, null);
        }
        return send(post(path, body, bearerToken, timeout), null);
    }

    /** {@code GET path}; {@code wait} overrides the request timeout (a long-poll). */
    JsonNode get(String path, Duration wait) throws SidecarException {
        HttpRequest request = HttpRequest.newBuilder(base.resolve(path))
                .timeout(wait == null ? timeout : wait)
                .GET()
                .build();
        return send(request, path);
    }

    private HttpRequest post(String path, JsonNode body, String token, Duration limit)
            throws SidecarException {
        byte[] bytes;
        try {
            bytes = mapper.writeValueAsBytes(body);
        } catch (IOException e) {
            throw new SidecarException("cannot encode the request to " + path + ": " + e, false,
                    0, null, e);
        }
        HttpRequest.Builder builder = HttpRequest.newBuilder(base.resolve(path))
                .timeout(limit)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofByteArray(bytes));
        if (token != null) {
            builder.header("Authorization", "Bearer " + token);
        }
        return builder.build();
    }

    private JsonNode send(HttpRequest request, String label) throws SidecarException {
        String where = request.method() + " " + request.uri();
        HttpResponse<byte[]> response;
        try {
            response = http.send(request, HttpResponse.BodyHandlers.ofByteArray());
        } catch (IOException e) {
            throw new SidecarException("the aclstore sidecar did not answer " + where + ": " + e,
                    true, 0, null, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new SidecarException("interrupted while calling " + where, true, 0, null, e);
        }
        int status = response.statusCode();
        JsonNode body;
        try {
            body = mapper.readTree(response.body());
        } catch (IOException e) {
            throw new SidecarException(where + " answered " + status + " with a body that is not "
                    + "JSON: is " + base + " an aclstore sidecar?", status >= 500, status, null, e);
        }
        if (status == 200) {
            return body;
        }
        String message = body.path("message").asText("HTTP " + status);
        Integer code = body.hasNonNull("kafkaErrorCode") ? body.get("kafkaErrorCode").asInt() : null;
        throw new SidecarException("the aclstore sidecar refused " + where + " (" + status + " "
                + body.path("error").asText("") + "): " + message, status >= 500, status, code, null);
    }
}
