// A tiny RocketMQ remoting client for the dashboard test: just enough to be
// a consumer rmqcoord sees (HEART_BEAT every second over one TCP connection,
// JSON headers), and to leave by closing the socket. Incoming frames
// (replies, NOTIFY_CONSUMER_IDS_CHANGED) are counted and otherwise ignored.
'use strict';
const net = require('node:net');

const HEART_BEAT = 34;

function frame(header, body) {
  const h = Buffer.from(JSON.stringify(header));
  const b = body ? Buffer.from(JSON.stringify(body)) : Buffer.alloc(0);
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
  constructor({ port, clientId, group, topics }) {
    Object.assign(this, { port, clientId, group, topics });
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
      this.sock.on('data', () => { this.frames++; });
      this.sock.on('error', (e) => { if (!this.timer) reject(e); });
    });
  }

  beat() {
    const header = { code: HEART_BEAT, language: 'JAVA', version: 409, opaque: this.opaque++, flag: 0, extFields: {} };
    this.sock.write(frame(header, heartbeatBody(this.clientId, this.group, this.topics)));
  }

  stop() {
    clearInterval(this.timer);
    this.timer = null;
    if (this.sock) this.sock.destroy();
  }
}

module.exports = { Consumer, frame, heartbeatBody };
