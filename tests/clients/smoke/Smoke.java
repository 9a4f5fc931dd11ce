// Smoke.java: a real RocketMQ Java producer and push consumer through
// rmqcoord. Sends N messages (tags, keys, bodies), consumes them with a push
// consumer of a new group from the first offset, and checks every body
// arrives once with the msgId and queue offset the send reported. Prints one
// JSON line; exit 0 when all arrived.
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageClientExt;
import org.apache.rocketmq.common.message.MessageExt;

public class Smoke {
    public static void main(String[] args) throws Exception {
        String ns = args[0];
        String topic = args[1];
        int n = Integer.parseInt(args[2]);
        DefaultMQProducer producer = new DefaultMQProducer("SMOKE_P");
        producer.setNamesrvAddr(ns);
        producer.start();
        Map<String, SendResult> sent = new ConcurrentHashMap<>();
        for (int i = 0; i < n; i++) {
            String body = "smoke-" + i;
            Message m = new Message(topic, i % 2 == 0 ? "even" : "odd", "key-" + i,
                                    body.getBytes(StandardCharsets.UTF_8));
            SendResult r = producer.send(m, 5000);
            if (r.getSendStatus() != SendStatus.SEND_OK)
                throw new IllegalStateException("send " + i + ": " + r);
            sent.put(body, r);
        }
        producer.shutdown();

        CountDownLatch all = new CountDownLatch(n);
        AtomicInteger dup = new AtomicInteger(), bad = new AtomicInteger();
        Map<String, Boolean> seen = new ConcurrentHashMap<>();
        DefaultMQPushConsumer consumer = new DefaultMQPushConsumer("SMOKE_C");
        consumer.setNamesrvAddr(ns);
        consumer.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        consumer.subscribe(topic, "*");
        consumer.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                SendResult r = sent.get(body);
                if (r == null || !r.getMsgId().equals(m.getMsgId()) || r.getQueueOffset() != m.getQueueOffset()
                    || !(m instanceof MessageClientExt)
                    || !r.getOffsetMsgId().equals(((MessageClientExt) m).getOffsetMsgId())
                    || !m.getTopic().equals(topic)) {
                    System.err.println("mismatch: " + m + " sent " + r);
                    bad.incrementAndGet();
                }
                if (seen.put(body, true) != null)
                    dup.incrementAndGet();
                else
                    all.countDown();
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        consumer.start();
        boolean done = all.await(60, TimeUnit.SECONDS);
        consumer.shutdown();
        System.out.println("{\"sent\":" + n + ",\"received\":" + seen.size() + ",\"duplicates\":" + dup.get()
                           + ",\"mismatched\":" + bad.get() + "}");
        System.exit(done && bad.get() == 0 ? 0 : 1);
    }
}
