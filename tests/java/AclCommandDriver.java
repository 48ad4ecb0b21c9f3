/*
 * Runs many kafka-acls.sh command lines through Apache Kafka's own
 * org.apache.kafka.tools.AclCommand in one JVM, for aclstore's differential test
 * (tests/replicator/test_acls_differential.py; compiled at test time by devtools/java.py
 * compile_harness against the kafka-tools jars).
 *
 *   java AclCommandDriver < LINES
 *       LINES holds one JSON array of strings per line: the arguments of one kafka-acls.sh run
 *       (with --bootstrap-server).  For each, in order, prints one JSON object
 *       {"exit": code, "out": stdout text, "err": stderr text}.
 *
 * AclCommand ends with Exit.exit; the exit procedure installed here records the first code and
 * the output written up to that call, then throws to unwind.  AclCommand's main catches
 * Throwable (printing "Error while executing ACL command" and calling Exit.exit again), so only
 * the first call counts: the text captured then is what a real run would have printed.
 */

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.tools.AclCommand;

import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

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

    public static void main(String[] args) throws Exception {
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
            realOut.println(JSON.writeValueAsString(answer));
        }
        realOut.flush();
    }
}
