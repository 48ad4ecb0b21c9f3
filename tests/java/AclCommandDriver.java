/*
 * Runs many kafka-acls.sh command lines through Apache Kafka's own
 * org.apache.kafka.tools.AclCommand in one JVM, for aclstore's differential test
 * (tests/replicator/test_acls_differential.py; compiled at test time by devtools/java.py
 * compile_harness against the kafka-tools jars).
 *
 *   java AclCommandDriver SETTLE_MS < LINES
 *       LINES holds one JSON array of strings per line: the arguments of one kafka-acls.sh run
 *       (with --bootstrap-server).  For each, in order, prints one JSON object
 *       {"exit": code, "out": stdout text, "err": stderr text, "argv": the arguments as
 *       AclCommand received them, so that a test can check that every character arrived}.
 *       The JSON is read as UTF-8 and its escapes give any char, control chars too; the
 *       answers are UTF-8 with control chars escaped (but not U+0085, U+2028 or U+2029: split
 *       them into lines at line feeds only).  After a run that may have changed ACLs (an argument
 *       --add, -add, --remove, -remove, with or without =value, and something on stdout) the
 *       driver waits SETTLE_MS: the broker answers CreateAcls and DeleteAcls once the controller
 *       committed them, and its authorizer (which the next run's DescribeAcls reads) applies the
 *       change a moment later.  A run that printed nothing on stdout stopped at its options
 *       (AclCommand prints an option error and its usage on stderr) and sent no request: there
 *       is nothing to wait for.  (A run that changed ACLs without a word on stdout, and was not
 *       waited for, could only make a later run's answer differ: the test would fail.)
 *       A line ["#describe", BOOTSTRAP] instead prints every ACL the broker holds, one JSON
 *       object {"bindings": [[resourceType, name, patternType, principal, host, operation,
 *       permissionType], ...]} from Admin.describeAcls(AclBindingFilter.ANY).
 *
 * AclCommand ends with Exit.exit; the exit procedure installed here records the first code and
 * the output written up to that call, then throws to unwind.  AclCommand's main catches
 * Throwable (printing "Error while executing ACL command" and calling Exit.exit again), so only
 * the first call counts: the text captured then is what a real run would have printed.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.tools.AclCommand;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

public final class AclCommandDriver {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Thrown by the exit procedure to leave AclCommand's main. */
    private static final class ExitCalled extends RuntimeException {
        ExitCalled() {
            super("exit", null, false, false);
        }
    }

    private static final class Run {
        final ByteArrayOutputStream out = new ByteArrayOutputStream();
        final ByteArrayOutputStream err = new ByteArrayOutputStream();
        Integer exit;
        String outAtExit;
        String errAtExit;

        String text(ByteArrayOutputStream stream) {
            return stream.toString(StandardCharsets.UTF_8);
        }
    }

    private static Run current;

    private static ObjectNode describe(String bootstrap) throws Exception {
        ObjectNode answer = JSON.createObjectNode();
        ArrayNode bindings = answer.putArray("bindings");
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            for (AclBinding b : admin.describeAcls(AclBindingFilter.ANY).values().get()) {
                ArrayNode row = bindings.addArray();
                row.add(b.pattern().resourceType().name()).add(b.pattern().name())
                    .add(b.pattern().patternType().name()).add(b.entry().principal())
                    .add(b.entry().host()).add(b.entry().operation().name())
                    .add(b.entry().permissionType().name());
            }
        }
        return answer;
    }

    public static void main(String[] args) throws Exception {
        long settleMs = args.length > 0 ? Long.parseLong(args[0]) : 0;
        PrintStream realOut = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        Exit.setExitProcedure((code, message) -> {
            Run run = current;
            if (run.exit == null) {
                System.out.flush();
                System.err.flush();
                run.exit = code;
                run.outAtExit = run.text(run.out);
                run.errAtExit = run.text(run.err);
            }
            throw new ExitCalled();
        });
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            List<String> argv = new ArrayList<>();
            for (JsonNode arg : JSON.readTree(line)) {
                argv.add(arg.asText());
            }
            if (argv.get(0).equals("#describe")) {
                realOut.println(JSON.writeValueAsString(describe(argv.get(1))));
                continue;
            }
            Run run = new Run();
            current = run;
            System.setOut(new PrintStream(run.out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(run.err, true, StandardCharsets.UTF_8));
            try {
                AclCommand.main(argv.toArray(new String[0]));
            } catch (ExitCalled expected) {
                // recorded by the exit procedure
            } finally {
                System.out.flush();
                System.err.flush();
            }
            ObjectNode answer = JSON.createObjectNode();
            answer.put("exit", run.exit == null ? 0 : run.exit);
            answer.put("out", run.exit == null ? run.text(run.out) : run.outAtExit);
            answer.put("err", run.exit == null ? run.text(run.err) : run.errAtExit);
            ArrayNode received = answer.putArray("argv");
            argv.forEach(received::add);
            realOut.println(JSON.writeValueAsString(answer));
            if (settleMs > 0 && !answer.get("out").asText().isEmpty()
                    && argv.stream().anyMatch(arg -> arg.matches("--?(add|remove)(=.*)?"))) {
                Thread.sleep(settleMs);
            }
        }
        realOut.flush();
    }
}
