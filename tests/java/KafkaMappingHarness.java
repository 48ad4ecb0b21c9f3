/*
 * Answers principal-mapping cases with Apache Kafka's own classes, for aclstore's differential
 * test (tests/store/test_mapping_differential.py; compiled at test time by
 * devtools/java.py compile_harness against the Kafka jars).
 *
 *   java KafkaMappingHarness < CASES
 *       CASES holds one JSON object per line, one of:
 *         {"kind": "ssl", "rules": "RULE:...", "dn": "CN=a,O=b", "x500": bool}
 *             SslPrincipalMapper.fromRules(rules).getName(dn) (the rules parsed first, as the
 *             broker does at configuration time); with "x500": true the dn is first passed
 *             through new X500Principal(dn).getName(), as Kafka's DefaultKafkaPrincipalBuilder
 *             does with a certificate's subject;
 *         {"kind": "kerberos", "realm": "EXAMPLE.COM", "rules": ["RULE:...", ..], "name": "a/b@R"}
 *             KerberosShortNamer.fromUnparsedRules(realm, rules).shortName(KerberosName.parse(name));
 *         {"kind": "x500", "dn": "CN=a, O=b"}
 *             new X500Principal(dn).getName().
 *       and prints one JSON object per case, in order: {"ok": result} or
 *       {"error": simple class name of the exception, "message": its message}.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.security.kerberos.KerberosName;
import org.apache.kafka.common.security.kerberos.KerberosShortNamer;
import org.apache.kafka.common.security.ssl.SslPrincipalMapper;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

import javax.security.auth.x500.X500Principal;

public final class KafkaMappingHarness {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String answer(JsonNode c) throws Exception {
        switch (c.get("kind").asText()) {
            case "ssl": {
                SslPrincipalMapper mapper = SslPrincipalMapper.fromRules(c.get("rules").asText());
                String dn = c.get("dn").asText();
                if (c.path("x500").asBoolean(false)) {
                    dn = new X500Principal(dn).getName();
                }
                return mapper.getName(dn);
            }
            case "kerberos": {
                List<String> rules = new ArrayList<>();
                c.get("rules").forEach(rule -> rules.add(rule.asText()));
                KerberosShortNamer namer = KerberosShortNamer.fromUnparsedRules(c.get("realm").asText(), rules);
                return namer.shortName(KerberosName.parse(c.get("name").asText()));
            }
            case "x500":
                return new X500Principal(c.get("dn").asText()).getName();
            default:
                throw new IllegalStateException("unknown case kind: " + c.get("kind"));
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode c = JSON.readTree(line);
            ObjectNode result = JSON.createObjectNode();
            try {
                result.put("ok", answer(c));
            } catch (Exception | StackOverflowError e) {
                result.put("error", e.getClass().getSimpleName());
                result.put("message", String.valueOf(e.getMessage()));
            }
            out.println(JSON.writeValueAsString(result));
        }
        out.flush();
    }
}
