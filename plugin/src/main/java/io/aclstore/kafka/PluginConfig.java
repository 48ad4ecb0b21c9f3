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
    /**
     * The bound of an ACL administration call (CreateAcls, DeleteAcls, DescribeAcls): a write
     * waits for the log's acknowledgement, which on a cluster that has just started waits for
     * Kafka's transaction coordinator to load (seconds), far beyond a decision's bound.
     */
    static final String ADMIN_TIMEOUT_MS = "aclstore.admin.timeout.ms";
    static final String READY_POLL_MS = "aclstore.ready.poll.ms";
    static final String CACHE_MAX_STALENESS_MS = "aclstore.cache.max.staleness.ms";
    /**
     * At a staleness bound of 0 (the default), the lease of the decision cache: the sidecar makes
     * no change visible before the plugin dropped its older entries or this lease ran out, so a
     * dead broker holds the sidecar's applies back for at most this long. 0: no cache at all.
     */
    static final String CACHE_LEASE_MS = "aclstore.cache.lease.ms";
    static final long MAX_CACHE_LEASE_MS = 10_000;
    /**
     * A cached ALLOWED answer is asked again after this long (default a minute), so the sidecar
     * sees each grant in use at least that often; at most an hour, the period in which the
     * sidecar's audit records each binding's first use whatever its allow sample.
     */
    static final String CACHE_ENTRY_MAX_AGE_MS = "aclstore.cache.entry.max.age.ms";
    static final long MAX_CACHE_ENTRY_MAX_AGE_MS = 3_600_000;
    /** A PEM file of CA certificates for an https:// sidecar (default: the JVM's trust store). */
    static final String SSL_CA_LOCATION = "aclstore.ssl.ca.location";
    static final String SUPER_USERS = "super.users";

    private static final Set<String> KNOWN = Set.of(
            URL, COMMAND_CONFIG, BEARER_TOKEN, REQUEST_TIMEOUT_MS, ADMIN_TIMEOUT_MS, READY_POLL_MS,
            CACHE_MAX_STALENESS_MS, CACHE_LEASE_MS, CACHE_ENTRY_MAX_AGE_MS, SSL_CA_LOCATION);
    static final String DEFAULT_URL = "http://127.0.0.1:9096";

    private final URI url;
    private final String bearerToken;
    private final Duration requestTimeout;
    private final Duration adminTimeout;
    private final Duration readyPoll;
    private final long cacheMaxStalenessMs;
    private final long cacheLeaseMs;
    private final long cacheEntryMaxAgeMs;
    private final Set<String> superUsers;
    private final SSLSocketFactory tls;
    private final Path pendingCommandConfig;

    private PluginConfig(URI url, String bearerToken, Duration requestTimeout,
                         Duration adminTimeout, Duration readyPoll,
                         long cacheMaxStalenessMs, long cacheLeaseMs, long cacheEntryMaxAgeMs,
                         Set<String> superUsers,
                         SSLSocketFactory tls,
                         Path pendingCommandConfig) {
        this.url = url;
        this.bearerToken = bearerToken;
        this.requestTimeout = requestTimeout;
        this.adminTimeout = adminTimeout;
        this.readyPoll = readyPoll;
        this.cacheMaxStalenessMs = cacheMaxStalenessMs;
        this.cacheLeaseMs = cacheLeaseMs;
        this.cacheEntryMaxAgeMs = cacheEntryMaxAgeMs;
        this.superUsers = superUsers;
        this.tls = tls;
        this.pendingCommandConfig = pendingCommandConfig;
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
        // On a cluster's first start the sidecar writes admin.properties only once it runs, and
        // it may read its log through this very broker: a file that does not exist yet is read
        // when an admin call needs it (aclstore.url and aclstore.ssl.ca.location then come from
        // the broker's own settings). A file that exists but cannot be read is an error.
        Path pending = null;
        if (commandConfig != null && Files.notExists(Path.of(commandConfig))) {
            pending = Path.of(commandConfig);
        } else if (commandConfig != null) {
            credential = load(commandConfig);
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
        long lease = nonNegative(configs, CACHE_LEASE_MS, 1000);
        if (lease > MAX_CACHE_LEASE_MS) {
            throw new ConfigException(CACHE_LEASE_MS, lease, "at most " + MAX_CACHE_LEASE_MS
                    + " ms (the sidecar grants no longer lease); 0 turns the cache off");
        }
        long entryMaxAge = positive(configs, CACHE_ENTRY_MAX_AGE_MS, 60_000);
        if (entryMaxAge > MAX_CACHE_ENTRY_MAX_AGE_MS) {
            throw new ConfigException(CACHE_ENTRY_MAX_AGE_MS, entryMaxAge, "at most "
                    + MAX_CACHE_ENTRY_MAX_AGE_MS + " ms (the sidecar records each grant's use "
                    + "once an hour; a longer-cached grant could look unused)");
        }
        SSLSocketFactory tls = ca == null ? null : PemTrust.socketFactory(SSL_CA_LOCATION, Path.of(ca));
        return new PluginConfig(
                url,
                token == null || token.isBlank() ? null : token.trim(),
                Duration.ofMillis(positive(configs, REQUEST_TIMEOUT_MS, 2000)),
                Duration.ofMillis(positive(configs, ADMIN_TIMEOUT_MS, 30_000)),
                Duration.ofMillis(positive(configs, READY_POLL_MS, 200)),
                nonNegative(configs, CACHE_MAX_STALENESS_MS, 0),
                lease,
                entryMaxAge,
                superUsers(string(configs, SUPER_USERS, "")),
                tls,
                pending);
    }

    private static Properties load(String commandConfig) {
        Properties credential = new Properties();
        try (Reader reader = Files.newBufferedReader(Path.of(commandConfig),
                StandardCharsets.UTF_8)) {
            credential.load(reader);
        } catch (IOException e) {
            throw new ConfigException(COMMAND_CONFIG, commandConfig, "cannot read it (" + e
                    + "): point it at the sidecar node's admin.properties");
        }
        return credential;
    }

    /**
     * The bearer token of {@link #COMMAND_CONFIG} when that file did not exist at configure and
     * does now; else null.
     */
    String pendingBearerToken() {
        if (pendingCommandConfig == null || !Files.isReadable(pendingCommandConfig)) {
            return null;
        }
        String token = load(pendingCommandConfig.toString()).getProperty(BEARER_TOKEN);
        return token == null || token.isBlank() ? null : token.trim();
    }

    /** The {@link #COMMAND_CONFIG} file still to be read, or null. */
    Path pendingCommandConfig() {
        return pendingCommandConfig;
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

    Duration adminTimeout() {
        return adminTimeout;
    }

    Duration readyPoll() {
        return readyPoll;
    }

    long cacheMaxStalenessMs() {
        return cacheMaxStalenessMs;
    }

    long cacheLeaseMs() {
        return cacheLeaseMs;
    }

    long cacheEntryMaxAgeMs() {
        return cacheEntryMaxAgeMs;
    }

    Set<String> superUsers() {
        return superUsers;
    }

    /** Sockets trusting {@link #SSL_CA_LOCATION}, or null for the JVM's default trust store. */
    SSLSocketFactory tls() {
        return tls;
    }
}
