// Test peer for rmqcoord: K real RocketMQ Java consumers in one JVM, driven by
// stdin, reporting what each one holds as JSON Lines on stdout.
// The same source is compiled against rocketmq-client 4.9.8 and 5.3.3 (see
// pom.xml / build.sh); API differences between the two are bridged by
// reflection. Command line: see usage() or tests/clients/README.md.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;

import org.apache.rocketmq.client.consumer.AllocateMessageQueueStrategy;
import org.apache.rocketmq.client.consumer.DefaultLitePullConsumer;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.ConsumeOrderlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.consumer.listener.MessageListenerOrderly;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMachineRoomNearby;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragely;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueAveragelyByCircle;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByConfig;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueByMachineRoom;
import org.apache.rocketmq.client.consumer.rebalance.AllocateMessageQueueConsistentHash;
import org.apache.rocketmq.client.consumer.store.OffsetStore;
import org.apache.rocketmq.client.consumer.store.ReadOffsetType;
import org.apache.rocketmq.client.impl.consumer.ProcessQueue;
import org.apache.rocketmq.client.impl.consumer.RebalanceImpl;
import org.apache.rocketmq.client.impl.factory.MQClientInstance;
import org.apache.rocketmq.common.message.MessageQueue;
import org.apache.rocketmq.remoting.RemotingClient;
import org.apache.rocketmq.remoting.netty.NettyRequestProcessor;
import org.apache.rocketmq.remoting.protocol.RemotingCommand;

public class Probe {
    static PrintStream out; // the JSON Lines channel (System.out is redirected to stderr)
    static final Object OUT_LOCK = new Object();

    // ---- options ----
    static String namesrv, group, topic, instance, alloc = "AVG", clientIp, topic2, serialize;
    static boolean broadcast, orderly, litePull, heartbeatV2;
    static int count = 1;
    static long subscribe2AfterMs = -1, heartbeatMs = -1, rebalanceMs = -1, pollNsMs = -1;
    static String configQueues = "", idcs = "", nearbyInner = "AVG";
    static int startRetries = 30, virtualNodes = 10;

    static void usage(String why) {
        System.err.println("probe: " + why);
        System.err.println("usage: probe --namesrv HOST:PORT --group G --topic T --instance NAME"
            + " --alloc AVG|AVG_BY_CIRCLE|CONFIG|MACHINE_ROOM|MACHINE_ROOM_NEARBY|CONSISTENT_HASH"
            + " [--client-ip IP] [--broadcast] [--orderly] [--lite-pull] [--count K]"
            + " [--subscribe2 T2 --subscribe2-after-ms N] [--heartbeat-ms N] [--rebalance-ms N]"
            + " [--poll-nameserver-ms N] [--serialize JSON|ROCKETMQ] [--heartbeat-v2]"
            + " [--config BROKER:QID,...] [--consumer-idcs ROOM,...] [--nearby-inner AVG|AVG_BY_CIRCLE] [--virtual-nodes N]");
        System.exit(2);
    }

    static void parse(String[] a) {
        for (int i = 0; i < a.length; i++) {
            String k = a[i];
            final int idx = i;
            switch (k) {
                case "--broadcast": broadcast = true; continue;
                case "--orderly": orderly = true; continue;
                case "--lite-pull": litePull = true; continue;
                case "--heartbeat-v2": heartbeatV2 = true; continue;
                default: break;
            }
            if (i + 1 >= a.length) usage("missing value for " + k);
            String val = a[++i];
            switch (k) {
                case "--namesrv": namesrv = val; break;
                case "--group": group = val; break;
                case "--topic": topic = val; break;
                case "--instance": instance = val; break;
                case "--alloc": alloc = val; break;
                case "--client-ip": clientIp = val; break;
                case "--count": count = Integer.parseInt(val); break;
                case "--subscribe2": topic2 = val; break;
                case "--subscribe2-after-ms": subscribe2AfterMs = Long.parseLong(val); break;
                case "--heartbeat-ms": heartbeatMs = Long.parseLong(val); break;
                case "--rebalance-ms": rebalanceMs = Long.parseLong(val); break;
                case "--poll-nameserver-ms": pollNsMs = Long.parseLong(val); break;
                case "--serialize": serialize = val; break;
                case "--config": case "--config-queues": configQueues = val; break;
                case "--consumer-idcs": case "--idcs": idcs = val; break;
                case "--virtual-nodes": virtualNodes = Integer.parseInt(val); break;
                case "--nearby-inner": nearbyInner = val; break;
                case "--start-retries": startRetries = Integer.parseInt(val); break;
                default: usage("unknown option " + k + " (at " + idx + ")");
            }
        }
        if (namesrv == null || group == null || topic == null || instance == null) usage("--namesrv, --group, --topic and --instance are required");
        if (count < 1 || count > 1000) usage("--count must be 1..1000");
        if (topic2 != null && subscribe2AfterMs < 0) subscribe2AfterMs = 0;
    }

    // ---- JSON output ----
    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) b.append(String.format("\\u%04x", (int) c)); else b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static void emit(String event, Member m, String rest) {
        StringBuilder b = new StringBuilder("{\"event\":").append(q(event));
        if (m != null) b.append(",\"instance\":").append(q(m.name)).append(",\"clientId\":").append(q(m.clientId()));
        if (rest != null && !rest.isEmpty()) b.append(',').append(rest);
        b.append(",\"ts\":").append(System.currentTimeMillis()).append('}');
        synchronized (OUT_LOCK) {
            out.println(b);
            out.flush();
        }
    }

    // ---- reflection helpers (one source for both client versions) ----
    static Object field(Object o, Class<?> type) {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (type.isAssignableFrom(f.getType())) {
                    try {
                        f.setAccessible(true);
                        Object v = f.get(o);
                        if (v != null) return v;
                    } catch (ReflectiveOperationException | RuntimeException e) { /* next */ }
                }
            }
        }
        return null;
    }

    static Object fieldNamed(Object o, String name) {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) { /* superclass */ } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }
        return null;
    }

    static Method method(Object o, String name, int params) {
        for (Method m : o.getClass().getMethods()) if (m.getName().equals(name) && m.getParameterCount() == params) return m;
        return null;
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static void setMessageModelBroadcast(Object consumer) throws Exception {
        Method m = method(consumer, "setMessageModel", 1);
        Class<? extends Enum> t = (Class<? extends Enum>) m.getParameterTypes()[0];
        m.invoke(consumer, Enum.valueOf(t, "BROADCASTING"));
    }

    // ---- strategies ----
    static String roomAfterDash(String s) {
        int i = s.lastIndexOf('-');
        return i < 0 ? null : s.substring(i + 1);
    }

    static AllocateMessageQueueStrategy strategy(String name) {
        switch (name) {
            case "AVG": return new AllocateMessageQueueAveragely();
            case "AVG_BY_CIRCLE": return new AllocateMessageQueueAveragelyByCircle();
            case "CONSISTENT_HASH": return new AllocateMessageQueueConsistentHash(virtualNodes);
            case "CONFIG": {
                AllocateMessageQueueByConfig s = new AllocateMessageQueueByConfig();
                List<MessageQueue> l = new ArrayList<>();
                for (String e : configQueues.split(",")) {
                    if (e.isEmpty()) continue;
                    int c = e.lastIndexOf(':');
                    l.add(new MessageQueue(topic, e.substring(0, c), Integer.parseInt(e.substring(c + 1))));
                }
                s.setMessageQueueList(l);
                return s;
            }
            case "MACHINE_ROOM": {
                AllocateMessageQueueByMachineRoom s = new AllocateMessageQueueByMachineRoom();
                s.setConsumeridcs(new HashSet<>(Arrays.asList(idcs.split(","))));
                return s;
            }
            case "MACHINE_ROOM_NEARBY": {
                // rooms: the text after the last '-' of the broker name / client id
                // (the rule rmqcoord's allocation route applies without explicit maps)
                AllocateMachineRoomNearby.MachineRoomResolver r = new AllocateMachineRoomNearby.MachineRoomResolver() {
                    public String brokerDeployIn(MessageQueue mq) { return roomAfterDash(mq.getBrokerName()); }
                    public String consumerDeployIn(String clientID) { return roomAfterDash(clientID); }
                };
                return new AllocateMachineRoomNearby(strategy(nearbyInner), r);
            }
            default: usage("unknown --alloc " + name); return null;
        }
    }

    // ---- one consumer ----
    static final class Member {
        final String name;
        Object consumer; // DefaultMQPushConsumer or DefaultLitePullConsumer
        volatile String lastHoldings = null, lastOffsets = null;
        volatile boolean stopped;

        Member(String name) { this.name = name; }

        String clientId() {
            try {
                Method m = method(consumer, "buildMQClientId", 0);
                return (String) m.invoke(consumer);
            } catch (Exception e) {
                return null;
            }
        }

        Object impl() {
            if (consumer instanceof DefaultMQPushConsumer) return ((DefaultMQPushConsumer) consumer).getDefaultMQPushConsumerImpl();
            return fieldNamed(consumer, "defaultLitePullConsumerImpl");
        }

        RebalanceImpl rebalance() {
            Object impl = impl();
            return impl == null ? null : (RebalanceImpl) field(impl, RebalanceImpl.class);
        }

        MQClientInstance factory() {
            Object impl = impl();
            return impl == null ? null : (MQClientInstance) field(impl, MQClientInstance.class);
        }

        OffsetStore offsetStore() {
            Object impl = impl();
            return impl == null ? null : (OffsetStore) field(impl, OffsetStore.class);
        }

        void build() throws Exception {
            String inst = name;
            if (litePull) {
                DefaultLitePullConsumer c = new DefaultLitePullConsumer(group);
                c.setNamesrvAddr(namesrv);
                c.setInstanceName(inst);
                if (clientIp != null) c.setClientIP(clientIp);
                if (heartbeatMs > 0) c.setHeartbeatBrokerInterval((int) heartbeatMs);
                if (pollNsMs > 0) c.setPollNameServerInterval((int) pollNsMs);
                c.setAllocateMessageQueueStrategy(strategy(alloc));
                if (broadcast) setMessageModelBroadcast(c);
                c.subscribe(topic, "*");
                consumer = c;
            } else {
                DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
                c.setNamesrvAddr(namesrv);
                c.setInstanceName(inst);
                if (clientIp != null) c.setClientIP(clientIp);
                if (heartbeatMs > 0) c.setHeartbeatBrokerInterval((int) heartbeatMs);
                if (pollNsMs > 0) c.setPollNameServerInterval((int) pollNsMs);
                c.setAllocateMessageQueueStrategy(strategy(alloc));
                if (broadcast) setMessageModelBroadcast(c);
                c.setConsumeThreadMin(1);
                c.setConsumeThreadMax(1);
                c.subscribe(topic, "*");
                if (orderly) {
                    c.registerMessageListener((MessageListenerOrderly) (msgs, ctx) -> ConsumeOrderlyStatus.SUCCESS);
                } else {
                    c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> ConsumeConcurrentlyStatus.CONSUME_SUCCESS);
                }
                consumer = c;
            }
            if (heartbeatV2) {
                Method m = method(consumer, "setUseHeartbeatV2", 1);
                m.invoke(consumer, true);
            }
        }

        boolean running() {
            Object impl = impl();
            if (impl == null) return false;
            try {
                Object st = method(impl, "getServiceState", 0) != null ? method(impl, "getServiceState", 0).invoke(impl) : fieldNamed(impl, "serviceState");
                return st != null && st.toString().equals("RUNNING");
            } catch (Exception e) {
                return false;
            }
        }

        void start() throws Exception {
            for (int attempt = 0; ; attempt++) {
                build();
                try {
                    method(consumer, "start", 0).invoke(consumer);
                } catch (java.lang.reflect.InvocationTargetException e) {
                    Throwable t = e.getCause();
                    emit("start_error", this, "\"error\":" + q(String.valueOf(t)) + ",\"attempt\":" + attempt);
                }
                if (running()) break;
                if (attempt + 1 >= startRetries) throw new IllegalStateException("consumer did not start after " + startRetries + " attempts");
                try { method(consumer, "shutdown", 0).invoke(consumer); } catch (Exception e) { /* already down */ }
                Thread.sleep(1000);
            }
            hookNotify();
            emit("started", this, "\"version\":" + q(clientVersion()));
        }

        // Replace the client's NOTIFY_CONSUMER_IDS_CHANGED (40) processor by one
        // that reports the NOTIFY on stdout, then hands it to the original.
        void hookNotify() {
            try {
                MQClientInstance f = factory();
                if (f == null) return;
                RemotingClient rc = f.getMQClientAPIImpl().getRemotingClient();
                Object table = fieldNamed(rc, "processorTable");
                if (!(table instanceof Map)) return;
                Object pair = ((Map<?, ?>) table).get(40);
                if (pair == null) return;
                final NettyRequestProcessor orig = (NettyRequestProcessor) method(pair, "getObject1", 0).invoke(pair);
                ExecutorService ex = (ExecutorService) method(pair, "getObject2", 0).invoke(pair);
                final Member self = this;
                rc.registerProcessor(40, new NettyRequestProcessor() {
                    public RemotingCommand processRequest(io.netty.channel.ChannelHandlerContext ctx, RemotingCommand req) throws Exception {
                        if (req.getCode() == 40) {
                            String g = req.getExtFields() == null ? null : req.getExtFields().get("consumerGroup");
                            emit("notify", self, "\"group\":" + q(g));
                        }
                        return orig.processRequest(ctx, req);
                    }

                    public boolean rejectRequest() { return orig.rejectRequest(); }
                }, ex);
            } catch (Exception e) {
                System.err.println("probe: could not hook NOTIFY: " + e);
            }
        }

        void poll() {
            if (stopped) return;
            RebalanceImpl r = rebalance();
            if (r == null) return;
            TreeMap<String, String> qs = new TreeMap<>();
            TreeMap<String, String> offs = new TreeMap<>();
            OffsetStore os = offsetStore();
            for (Map.Entry<MessageQueue, ProcessQueue> e : r.getProcessQueueTable().entrySet()) {
                MessageQueue mq = e.getKey();
                ProcessQueue pq = e.getValue();
                if (pq.isDropped()) continue;
                String key = mq.getTopic() + "\u0000" + mq.getBrokerName() + "\u0000" + String.format("%08d", mq.getQueueId());
                String obj = "{\"topic\":" + q(mq.getTopic()) + ",\"broker\":" + q(mq.getBrokerName()) + ",\"queueId\":" + mq.getQueueId()
                    + (orderly ? ",\"locked\":" + pq.isLocked() : "") + "}";
                qs.put(key, obj);
                if (os != null) {
                    long off = os.readOffset(mq, ReadOffsetType.READ_FROM_MEMORY);
                    offs.put(key, "{\"topic\":" + q(mq.getTopic()) + ",\"broker\":" + q(mq.getBrokerName()) + ",\"queueId\":" + mq.getQueueId() + ",\"offset\":" + off + "}");
                }
            }
            String h = "\"queues\":[" + String.join(",", qs.values()) + "]";
            synchronized (this) {
                if (!stopped && !h.equals(lastHoldings)) {
                    lastHoldings = h;
                    emit("holdings", this, h);
                }
            }
            String o = "\"offsets\":[" + String.join(",", offs.values()) + "]";
            if (!o.equals(lastOffsets)) {
                lastOffsets = o;
                emit("offsets", this, o);
            }
        }

        void subscribe2() {
            try {
                consumer.getClass().getMethod("subscribe", String.class, String.class).invoke(consumer, topic2, "*");
                emit("subscribed", this, "\"topic\":" + q(topic2));
            } catch (Exception e) {
                emit("error", this, "\"error\":" + q("subscribe2: " + e));
            }
        }

        // "stopping" marks the moment the consumer stops consuming: the client
        // releases its queue locks before it drops its process queues, so for
        // orderly checks what it still lists after this line is not consumed.
        void shutdown() {
            if (stopped) return;
            emit("stopping", this, null);
            try {
                method(consumer, "shutdown", 0).invoke(consumer);
            } catch (Exception e) {
                System.err.println("probe: shutdown " + name + ": " + e);
            }
            stopped = true;
            synchronized (this) {
                if (lastHoldings != null && !lastHoldings.equals("\"queues\":[]")) {
                    lastHoldings = "\"queues\":[]";
                    emit("holdings", this, lastHoldings);
                }
            }
            emit("shutdown", this, null);
        }
    }

    static String clientVersion() {
        try {
            Class<?> v = Class.forName("org.apache.rocketmq.common.MQVersion");
            int cur = v.getField("CURRENT_VERSION").getInt(null);
            return (String) v.getMethod("getVersionDesc", int.class).invoke(null, cur);
        } catch (Exception e) {
            return "unknown";
        }
    }

    static final List<Member> members = new ArrayList<>();
    static final AtomicBoolean down = new AtomicBoolean();

    static void shutdownAll() {
        if (!down.compareAndSet(false, true)) return;
        for (Member m : members) m.shutdown();
        emit("exit", null, null);
    }

    public static void main(String[] args) throws Exception {
        out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err); // anything else printed goes to stderr
        parse(args);
        // Must be set before the client classes read them (static initialisers).
        if (rebalanceMs > 0) System.setProperty("rocketmq.client.rebalance.waitInterval", String.valueOf(rebalanceMs));
        if (serialize != null) System.setProperty("rocketmq.serialize.type", serialize);
        if (System.getProperty("rocketmq.client.logRoot") == null) {
            System.setProperty("rocketmq.client.logRoot", System.getProperty("java.io.tmpdir") + "/rmqprobe-logs");
        }
        if (heartbeatV2 && method(new DefaultMQPushConsumer(), "setUseHeartbeatV2", 1) == null) {
            emit("unsupported", null, "\"option\":\"--heartbeat-v2\",\"version\":" + q(clientVersion()));
            System.exit(3);
        }

        for (int i = 0; i < count; i++) members.add(new Member(count == 1 ? instance : instance + "-" + i));

        Runtime.getRuntime().addShutdownHook(new Thread(Probe::shutdownAll, "probe-shutdown"));

        Thread poller = new Thread(() -> {
            while (!down.get()) {
                for (Member m : members) {
                    if (m.consumer == null) continue;
                    try { m.poll(); } catch (RuntimeException e) { /* table changing; next round */ }
                }
                try { Thread.sleep(20); } catch (InterruptedException e) { return; }
            }
        }, "probe-poll");
        poller.setDaemon(true);

        Thread stdin = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.trim().equals("stop")) break;
                }
            } catch (Exception e) { /* EOF */ }
            shutdownAll();
            System.exit(0);
        }, "probe-stdin");
        stdin.setDaemon(true);
        stdin.start();

        poller.start();
        for (Member m : members) {
            if (down.get()) break;
            m.start();
        }
        if (topic2 != null) {
            Thread.sleep(Math.max(0, subscribe2AfterMs));
            for (Member m : members) if (!down.get()) m.subscribe2();
        }
        stdin.join();
    }
}
