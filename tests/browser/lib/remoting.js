// A tiny RocketMQ remoting client for the dashboard test: just enough to be
// a consumer rmqcoord sees (HEART_BEAT every second over one TCP connection,
// JSON headers), and to leave by closing the socket. Incoming frames
// (replies, NOTIFY_CONSUMER_IDS_CHANGED) are counted and otherwise ignored,
// except GET_CONSUMER_RUNNING_INFO when the consumer has a `strategy`: it is
// answered like a Java client (properties.allocateMessageQueueStrategy, the
// queues in `holding`).
'use strict';
const net = require('node:net');

const HEART_BEAT = 34;
const GET_CONSUMER_RUNNING_INFO = 307;
const JAVA_STRATEGY = {
  AVG: 'AllocateMessageQueueAveragely',
  AVG_BY_CIRCLE: 'AllocateMessageQueueAveragelyByCircle',
  CONSISTENT_HASH: 'AllocateMessageQueueConsistentHash',
};

function frame(header, body) {
  const h = Buffer.from(JSON.stringify(header));
  const b = !body ? Buffer.alloc(0)
    : Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  const out = Buffer.alloc(8 + h.length + b.length);
  out.writeInt32BE(4 + h.length + b.length, 0);
  out.writeInt32BE(h.length, 4); // serialize type 0 (JSON) in the top byte
  h.copy(out, 8);
  b.copy(out, 8 + h.length);
  return out;
}

function heartbeatBody(clientId, group, topics) {
  return {
    clientID: clientId,
    consumerDataSet: [{
      groupName: group,
      consumeType: 'CONSUME_PASSIVELY',
      messageModel: 'CLUSTERING',
      consumeFromWhere: 'CONSUME_FROM_LAST_OFFSET',
      unitMode: false,
      subscriptionDataSet: topics.map((t) => ({
        classFilterMode: false, topic: t, subString: '*', tagsSet: [], codeSet: [], subVersion: 1, expressionType: 'TAG',
      })),
    }],
    producerDataSet: [],
  };
}

class Consumer {
  constructor({ port, clientId, group, topics, strategy = null, holding = [] }) {
    Object.assign(this, { port, clientId, group, topics, strategy, holding });
    this.buf = Buffer.alloc(0);
    this.asked = 0;
    this.opaque = 1;
    this.frames = 0;
    this.timer = null;
  }

  start() {
    return new Promise((resolve, reject) => {
      this.sock = net.createConnection({ host: '127.0.0.1', port: this.port }, () => {
        this.beat();
        this.timer = setInterval(() => this.beat(), 1000);
        resolve(this);
      });
      this.sock.on('data', (d) => this.onData(d));
      this.sock.on('error', (e) => { if (!this.timer) reject(e); });
    });
  }

  beat() {
    const header = { code: HEART_BEAT, language: 'JAVA', version: 409, opaque: this.opaque++, flag: 0, extFields: {} };
    this.sock.write(frame(header, heartbeatBody(this.clientId, this.group, this.topics)));
  }

  onData(d) {
    this.buf = Buffer.concat([this.buf, d]);
    while (this.buf.length >= 4 && this.buf.length >= 4 + this.buf.readInt32BE(0)) {
      const len = this.buf.readInt32BE(0);
      const hlen = this.buf.readInt32BE(4) & 0xffffff;
      let header = null;
      try { header = JSON.parse(this.buf.subarray(8, 8 + hlen).toString()); } catch (_) { header = null; }
      this.buf = this.buf.subarray(4 + len);
      this.frames++;
      if (header && header.code === GET_CONSUMER_RUNNING_INFO && !(header.flag & 1) && this.strategy) this.answerRunningInfo(header);
    }
  }

  // fastjson's ConsumerRunningInfo: MessageQueue objects as mqTable keys.
  answerRunningInfo(req) {
    this.asked++;
    const entries = this.holding.map((q) => JSON.stringify({ brokerName: q.brokerName, queueId: q.queueId, topic: q.topic })
      + ':{"commitOffset":0,"droped":false}').join(',');
    const cls = 'org.apache.rocketmq.client.consumer.rebalance.' + (JAVA_STRATEGY[this.strategy] || this.strategy) + '@1b2c';
    const body = `{"mqTable":{${entries}},"properties":{"consumerGroup":${JSON.stringify(this.group)},`
      + `"allocateMessageQueueStrategy":${JSON.stringify(cls)}}}`;
    this.sock.write(frame({ code: 0, flag: 1, opaque: req.opaque, language: 'JAVA', version: 409 }, body));
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
    if (this.sock) this.sock.destroy();
  }
}

module.exports = { Consumer, frame, heartbeatBody };
