package io.aclstore.kafka;

import java.io.IOException;
import java.io.Reader;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import javax.net.ssl.SSLSocketFactory;
import org.apache.kafka.common.config.ConfigException;

/**
 * The plugin's settings, read from the broker's configuration once, validated, then frozen.
 *
 * <p>The broker hands an authorizer every broker setting, so only the plugin's own prefix is
 * checked for unknown keys: a misspelt {@code aclstore.} key is refused at broker start rather
 * than silently ignored.
 */
final class PluginConfig {
    static final String PREFIX = "aclstore.";
    static final String URL = "aclstore.url";
    static final String COMMAND_CONFIG = "aclstore.command.config";
    static final String BEARER_TOKEN = "aclstore.bearer.token";
    static final String REQUEST_TIMEOUT_MS = "aclstore.request.timeout.ms";
    static final String READY_POLL_MS = "aclstore.ready.poll.ms";
    static final String CACHE_MAX_STALENESS_MS = "aclstore.cache.max.staleness.ms";
    /** A PEM file of CA certificates for an https:// sidecar (default: the JVM's trust store). */
    static final String SSL_CA_LOCATION = "aclstore.ssl.ca.location";
    static final String SUPER_USERS = "super.users";

    private static final Set<String> KNOWN = Set.of(
            URL, COMMAND_CONFIG, BEARER_TOKEN, REQUEST_TIMEOUT_MS, READY_POLL_MS,
            CACHE_MAX_STALENESS_MS, SSL_CA_LOCATION);
    static final String DEFAULT_URL = "http://127.0.0.1:9096";

    private final URI url;
    private final String bearerToken;
    private final Duration requestTimeout;
    private final Duration readyPoll;
    private final long cacheMaxStalenessMs;
    private final Set<String> superUsers;
    private final SSLSocketFactory tls;

    private PluginConfig(URI url, String bearerToken, Duration requestTimeout, Duration readyPoll,
                         long cacheMaxStalenessMs, Set<String> superUsers, SSLSocketFactory tls) {
        this.url = url;
        this.bearerToken = bearerToken;
        this.requestTimeout = requestTimeout;
        this.readyPoll = readyPoll;
        this.cacheMaxStalenessMs = cacheMaxStalenessMs;
        this.superUsers = superUsers;
        this.tls = tls;
    }

    static PluginConfig from(Map<String, ?> configs) {
        for (String key : configs.keySet()) {
            if (key.startsWith(PREFIX) && !KNOWN.contains(key)) {
                throw new ConfigException(key, configs.get(key), "unknown aclstore authorizer "
                        + "setting; known: " + String.join(", ", new java.util.TreeSet<>(KNOWN)));
            }
        }
        Properties credential = new Properties();
        String commandConfig = string(configs, COMMAND_CONFIG, null);
        if (commandConfig != null) {
            try (Reader reader = Files.newBufferedReader(Path.of(commandConfig),
                    StandardCharsets.UTF_8)) {
                credential.load(reader);
            } catch (IOException e) {
                throw new ConfigException(COMMAND_CONFIG, commandConfig, "cannot read it (" + e
                        + "): point it at the sidecar node's admin.properties");
            }
        }
        String urlText = string(configs, URL, credential.getProperty(URL, DEFAULT_URL));
        URI url;
        try {
            url = new URI(urlText.endsWith("/") ? urlText : urlText + "/");
        } catch (URISyntaxException e) {
            throw new ConfigException(URL, urlText, "not a URL: use http://127.0.0.1:9096");
        }
        if (!"http".equals(url.getScheme()) && !"https".equals(url.getScheme())) {
            throw new ConfigException(URL, urlText, "use an http:// or https:// URL");
        }
        String token = string(configs, BEARER_TOKEN, credential.getProperty(BEARER_TOKEN));
        // The credential file's ssl.ca.location is the CA the CLI trusts for the same node.
        String ca = string(configs, SSL_CA_LOCATION, credential.getProperty("ssl.ca.location"));
        if (ca != null && !"https".equals(url.getScheme())) {
            throw new ConfigException(SSL_CA_LOCATION, ca, "is for an https:// sidecar; "
                    + URL + " is " + url);
        }
        SSLSocketFactory tls = ca == null ? null : PemTrust.socketFactory(SSL_CA_LOCATION, Path.of(ca));
        return new PluginConfig(
                url,
                token == null || token.isBlank() ? null : token.trim(),
                Duration.ofMillis(positive(configs, REQUEST_TIMEOUT_MS, 2000)),
                Duration.ofMillis(positive(configs, READY_POLL_MS, 200)),
                nonNegative(configs, CACHE_MAX_STALENESS_MS, 0),
                superUsers(string(configs, SUPER_USERS, "")),
                tls);
    }

    /** {@code User:a;User:b}, as Kafka's {@code super.users} is written. */
    static Set<String> superUsers(String text) {
        Set<String> out = new LinkedHashSet<>();
        for (String item : text.split(";")) {
            String principal = item.trim();
            if (principal.isEmpty()) {
                continue;
            }
            if (principal.indexOf(':') <= 0) {
                throw new ConfigException(SUPER_USERS, text, "each super user is Type:name, "
                        + "e.g. User:admin;User:ANONYMOUS");
            }
            out.add(principal);
        }
        return Collections.unmodifiableSet(out);
    }

    private static String string(Map<String, ?> configs, String key, String fallback) {
        Object value = configs.get(key);
        return value == null ? fallback : value.toString();
    }

    private static long number(Map<String, ?> configs, String key, long fallback) {
        Object value = configs.get(key);
        if (value == null) {
            return fallback;
        }
        try {
            return Long.parseLong(value.toString().trim());
        } catch (NumberFormatException e) {
            throw new ConfigException(key, value, "not a whole number of milliseconds");
        }
    }

    private static long positive(Map<String, ?> configs, String key, long fallback) {
        long value = number(configs, key, fallback);
        if (value <= 0) {
            throw new ConfigException(key, value, "must be above 0 ms");
        }
        return value;
    }

    private static long nonNegative(Map<String, ?> configs, String key, long fallback) {
        long value = number(configs, key, fallback);
        if (value < 0) {
            throw new ConfigException(key, value, "must be 0 ms or more");
        }
        return value;
    }

    URI url() {
        return url;
    }

    /** Null when the plugin has no credential for the admin endpoints. */
    String bearerToken() {
        return bearerToken;
    }

    Duration requestTimeout() {
        return requestTimeout;
    }

    Duration readyPoll() {
        return readyPoll;
    }

    long cacheMaxStalenessMs() {
        return cacheMaxStalenessMs;
    }

    Set<String> superUsers() {
        return superUsers;
    }

    /** Sockets trusting {@link #SSL_CA_LOCATION}, or null for the JVM's default trust store. */
    SSLSocketFactory tls() {
        return tls;
    }
}
