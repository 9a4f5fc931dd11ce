// Runs several real `mqadmin` sub-commands in one JVM, one after another.
//
// Input (stdin): one command per line, its arguments separated by TABs, the
// first field an id, e.g. "topicList-1\ttopicList\t-n\t127.0.0.1:9876".
// Output (stdout): one JSON object per command:
//   {"id":..,"args":[..],"startMs":..,"endMs":..,"out":"..","err":"..","timeout":false}
// where out/err are what the command printed on System.out/System.err.
//
// mqadmin prints a failed command's exception on stderr and still returns
// normally (its process exit code is 0 either way), so the harness judges a
// command by what it printed. The admin entry point is called by reflection
// so that this file compiles without RocketMQ on the classpath and runs with
// any version of the tool.
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

public final class MqadminBatch {
    private MqadminBatch() {
    }

    private static String json(String s) {
        StringBuilder b = new StringBuilder(s.length() + 16).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        return b.append('"').toString();
    }

    /**
     * The 5.x client's shutdown joins its NettyEventExecutor, which only looks
     * at its stop flag between 3-second polls of its event queue, so a command
     * often waits up to 3 s after its work is done. When the command thread is
     * in that join, interrupt the poll (the executor catches the interrupt and
     * sees the flag). Nothing else is touched.
     */
    private static void hurryShutdown(Thread cmd) {
        boolean joining = false;
        for (StackTraceElement e : cmd.getStackTrace()) {
            if (e.getClassName().endsWith(".ServiceThread") && e.getMethodName().equals("shutdown")) {
                joining = true;
                break;
            }
        }
        if (!joining) {
            return;
        }
        for (Thread th : Thread.getAllStackTraces().keySet()) {
            if (th.getName().equals("NettyEventExecutor")) {
                th.interrupt();
            }
        }
    }

    public static void main(String[] argv) throws Exception {
        long timeoutMs = Long.parseLong(System.getProperty("mqadmin.batch.timeoutMs", "30000"));
        Method main = Class.forName("org.apache.rocketmq.tools.command.MQAdminStartup")
            .getMethod("main", String[].class);
        PrintStream realOut = System.out;
        PrintStream realErr = System.err;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        List<String[]> cmds = new ArrayList<>();
        for (String line; (line = in.readLine()) != null; ) {
            if (!line.isEmpty()) {
                cmds.add(line.split("\t", -1));
            }
        }
        for (String[] fields : cmds) {
            String id = fields[0];
            String[] args = Arrays.copyOfRange(fields, 1, fields.length);
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            PrintStream pout = new PrintStream(out, true, "UTF-8");
            PrintStream perr = new PrintStream(err, true, "UTF-8");
            System.setOut(pout);
            System.setErr(perr);
            long start = System.currentTimeMillis();
            Thread t = new Thread(() -> {
                try {
                    main.invoke(null, (Object) args);
                } catch (Throwable e) {
                    (e.getCause() != null ? e.getCause() : e).printStackTrace(perr);
                }
            }, "mqadmin-" + id);
            t.setDaemon(true);
            t.start();
            long deadline = start + timeoutMs;
            while (t.isAlive() && System.currentTimeMillis() < deadline) {
                t.join(50);
                if (t.isAlive()) {
                    hurryShutdown(t);
                }
            }
            boolean timedOut = t.isAlive();
            long end = System.currentTimeMillis();
            System.setOut(realOut);
            System.setErr(realErr);
            pout.flush();
            perr.flush();
            StringBuilder a = new StringBuilder("[");
            for (int i = 0; i < args.length; i++) {
                a.append(i > 0 ? "," : "").append(json(args[i]));
            }
            a.append(']');
            realOut.println("{\"id\":" + json(id) + ",\"args\":" + a + ",\"startMs\":" + start
                + ",\"endMs\":" + end + ",\"timeout\":" + timedOut
                + ",\"out\":" + json(out.toString("UTF-8")) + ",\"err\":" + json(err.toString("UTF-8")) + "}");
            realOut.flush();
            // Give the previous command's client a moment to close its sockets,
            // so that captured traffic is attributed to the right command.
            TimeUnit.MILLISECONDS.sleep(50);
        }
        // Netty's event loops would keep the JVM alive for seconds of quiet period.
        System.exit(0);
    }
}
