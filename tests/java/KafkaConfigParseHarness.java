/*
 * Parses kafka-configs.sh --add-config values with Apache Kafka's own
 * kafka.admin.ConfigCommand.parseConfigsToBeAdded, for aclstore's differential test
 * (tests/replicator/test_configs_differential.py; compiled at test time by devtools/java.py
 * compile_harness against the Kafka jars).  No broker is involved.
 *
 *   java KafkaConfigParseHarness < LINES
 *       LINES holds one JSON string per line: an --add-config value.  For each, in order, prints
 *       one JSON object: {"ok": {key: value, ...}} or {"error": simple class name of the
 *       exception, "message": its message}, and "delete": the keys
 *       ConfigCommand.parseConfigsToBeDeleted reads from the same text given to --delete-config.
 */

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.Properties;

public final class KafkaConfigParseHarness {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        // ConfigCommandOptions is a class nested in a Scala object: reached by its binary name.
        Class<?> optionsClass = Class.forName("kafka.admin.ConfigCommand$ConfigCommandOptions");
        Class<?> command = Class.forName("kafka.admin.ConfigCommand");
        Method parse = command.getMethod("parseConfigsToBeAdded", optionsClass);
        Method parseDeleted = command.getMethod("parseConfigsToBeDeleted", optionsClass);
        PrintStream out = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            String value = JSON.readValue(line, String.class);
            String[] argv = {"--bootstrap-server", "127.0.0.1:9", "--alter", "--entity-type", "brokers",
                             "--entity-default", "--add-config", value, "--delete-config", value};
            ObjectNode answer = JSON.createObjectNode();
            try {
                Object options = optionsClass.getConstructor(String[].class).newInstance((Object) argv);
                Properties props = (Properties) parse.invoke(null, options);
                ObjectNode ok = answer.putObject("ok");
                for (String key : props.stringPropertyNames()) {
                    ok.put(key, props.getProperty(key));
                }
            } catch (InvocationTargetException wrapped) {
                Throwable e = wrapped.getCause();
                answer.put("error", e.getClass().getSimpleName());
                answer.put("message", e.getMessage());
            }
            Object options = optionsClass.getConstructor(String[].class).newInstance((Object) argv);
            scala.collection.Iterable<?> deleted = (scala.collection.Iterable<?>) parseDeleted.invoke(null, options);
            ArrayNode keys = answer.putArray("delete");
            deleted.foreach(key -> keys.add(key.toString()));
            out.println(JSON.writeValueAsString(answer));
        }
    }
}
