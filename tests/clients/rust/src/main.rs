// The Rust test peer of tests/clients: rocketmq-client-rust push consumers
// (crates.io, pinned in Cargo.toml/Cargo.lock). Same command line and output
// as the other probes of tests/clients.
use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use cheetah_string::CheetahString;
use rocketmq_client_rust::ClientConfig;
use rocketmq_client_rust::{
    AllocateMessageQueueAveragely, AllocateMessageQueueAveragelyByCircle, AllocateMessageQueueByConfig,
    AllocateMessageQueueByMachineRoom, AllocateMessageQueueByMachineRoomNearby, AllocateMessageQueueConsistentHash,
    AllocateMessageQueueStrategy, ClientResult, ClientRuntime, ClientRuntimeConfig, ConsumeConcurrentlyContext,
    ConsumeConcurrentlyStatus, ConsumeOrderlyContext, ConsumeOrderlyStatus, DefaultMQPushConsumer, MQPushConsumer,
    MachineRoomResolver, MessageListenerConcurrently, MessageListenerOrderly, MessageQueueListener,
};
use rocketmq_model::common::message::message_ext::MessageExt;
use rocketmq_model::common::message::message_queue::MessageQueue;
use rocketmq_protocol::protocol::heartbeat::message_model::MessageModel;
use rocketmq_runtime::{RuntimeConfig, RuntimeOwner};

static OUT: Mutex<()> = Mutex::new(());

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

fn emit(mut v: serde_json::Value) {
    v["ts"] = serde_json::json!(now_ms() as u64);
    let _g = OUT.lock().unwrap();
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{}", v);
    let _ = o.flush();
}

fn die(code: i32, msg: &str) -> ! {
    eprintln!("probe-rust: {msg}");
    std::process::exit(code)
}

#[derive(Default, Clone)]
struct Opts {
    namesrv: String,
    group: String,
    topic: String,
    instance: String,
    alloc: String,
    client_ip: Option<String>,
    broadcast: bool,
    orderly: bool,
    count: usize,
    subscribe2: Option<String>,
    subscribe2_after_ms: u64,
    heartbeat_ms: Option<u32>,
    rebalance_ms: Option<u64>,
    poll_nameserver_ms: Option<u32>,
    config: String,
    consumer_idcs: String,
    virtual_nodes: i32,
}

fn parse() -> Opts {
    let mut o = Opts { alloc: "AVG".into(), count: 1, virtual_nodes: 10, ..Default::default() };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        let flag = |i: &mut usize| -> String {
            *i += 1;
            args.get(*i).cloned().unwrap_or_else(|| die(2, &format!("{a} needs a value")))
        };
        let num = |s: String| -> u64 { s.parse().unwrap_or_else(|_| die(2, &format!("{a}: not a number: {s}"))) };
        match a {
            "--namesrv" => o.namesrv = flag(&mut i),
            "--group" => o.group = flag(&mut i),
            "--topic" => o.topic = flag(&mut i),
            "--instance" => o.instance = flag(&mut i),
            "--alloc" => o.alloc = flag(&mut i),
            "--client-ip" => o.client_ip = Some(flag(&mut i)),
            "--broadcast" => o.broadcast = true,
            "--orderly" => o.orderly = true,
            "--count" => o.count = num(flag(&mut i)) as usize,
            "--subscribe2" => o.subscribe2 = Some(flag(&mut i)),
            "--subscribe2-after-ms" => o.subscribe2_after_ms = num(flag(&mut i)),
            "--heartbeat-ms" => o.heartbeat_ms = Some(num(flag(&mut i)) as u32),
            "--rebalance-ms" => o.rebalance_ms = Some(num(flag(&mut i))),
            "--poll-nameserver-ms" => o.poll_nameserver_ms = Some(num(flag(&mut i)) as u32),
            "--config" => o.config = flag(&mut i),
            "--consumer-idcs" => o.consumer_idcs = flag(&mut i),
            "--virtual-nodes" => o.virtual_nodes = num(flag(&mut i)) as i32,
            _ => die(2, &format!("unknown option {a}")),
        }
        i += 1;
    }
    if o.namesrv.is_empty() || o.group.is_empty() || o.topic.is_empty() || o.instance.is_empty() {
        die(2, "--namesrv, --group, --topic and --instance are required");
    }
    if o.count < 1 {
        die(2, "--count must be >= 1");
    }
    o
}

/// Rooms by the rule rmqcoord's allocation route uses without explicit maps:
/// the text after the last '-' of a broker name or a client id.
struct DashRooms;
impl MachineRoomResolver for DashRooms {
    fn broker_deploy_in(&self, mq: &MessageQueue) -> Option<CheetahString> {
        mq.broker_name().as_str().rsplit('-').next().map(CheetahString::from)
    }
    fn consumer_deploy_in(&self, cid: &CheetahString) -> Option<CheetahString> {
        cid.as_str().rsplit('-').next().map(CheetahString::from)
    }
}

fn strategy(o: &Opts) -> Arc<dyn AllocateMessageQueueStrategy> {
    match o.alloc.as_str() {
        "AVG" => Arc::new(AllocateMessageQueueAveragely),
        "AVG_BY_CIRCLE" => Arc::new(AllocateMessageQueueAveragelyByCircle),
        "CONSISTENT_HASH" => Arc::new(AllocateMessageQueueConsistentHash::new(o.virtual_nodes)),
        "MACHINE_ROOM_NEARBY" => Arc::new(AllocateMessageQueueByMachineRoomNearby::new(
            Box::new(AllocateMessageQueueAveragely),
            Box::new(DashRooms),
        )),
        "MACHINE_ROOM" => {
            let rooms: HashSet<CheetahString> = o
                .consumer_idcs
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(CheetahString::from)
                .collect();
            Arc::new(AllocateMessageQueueByMachineRoom::new(rooms))
        }
        "CONFIG" => {
            let mut list = Vec::new();
            for item in o.config.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                let (b, q) = item.rsplit_once(':').unwrap_or_else(|| die(2, &format!("--config item {item}")));
                let q: i32 = q.parse().unwrap_or_else(|_| die(2, &format!("--config item {item}")));
                list.push(MessageQueue::from_parts(o.topic.as_str(), b, q));
            }
            Arc::new(AllocateMessageQueueByConfig::new(list))
        }
        other => die(2, &format!("unknown --alloc {other}")),
    }
}

/// Holdings: the client calls this after each rebalance that changed a
/// topic's assigned queues (its messageQueueChanged hook).
struct Holdings {
    instance: String,
    client_id: String,
    by_topic: Mutex<(HashMap<String, BTreeSet<(String, String, i32)>>, Option<String>)>,
}
impl MessageQueueListener for Holdings {
    fn message_queue_changed(&self, topic: &str, _all: &HashSet<MessageQueue>, assigned: &HashSet<MessageQueue>) {
        let mut g = self.by_topic.lock().unwrap();
        g.0.insert(
            topic.to_string(),
            assigned
                .iter()
                .map(|m| (m.topic_str().to_string(), m.broker_name().to_string(), m.queue_id()))
                .collect(),
        );
        let all: BTreeSet<&(String, String, i32)> = g.0.values().flatten().collect();
        let queues: Vec<serde_json::Value> = all
            .iter()
            .map(|(t, b, q)| serde_json::json!({"topic": t, "broker": b, "queueId": q}))
            .collect();
        let key = serde_json::to_string(&queues).unwrap_or_default();
        if g.1.as_deref() != Some(key.as_str()) {
            g.1 = Some(key);
            emit(serde_json::json!({"event": "holdings", "instance": self.instance,
                "clientId": self.client_id, "queues": queues}));
        }
    }
}

struct Quiet;
impl MessageListenerConcurrently for Quiet {
    fn consume_message(&self, _m: &[&MessageExt], _c: &ConsumeConcurrentlyContext) -> ClientResult<ConsumeConcurrentlyStatus> {
        Ok(ConsumeConcurrentlyStatus::ConsumeSuccess)
    }
}
impl MessageListenerOrderly for Quiet {
    fn consume_message(&self, _m: &[&MessageExt], _c: &mut ConsumeOrderlyContext) -> ClientResult<ConsumeOrderlyStatus> {
        Ok(ConsumeOrderlyStatus::Success)
    }
}

#[tokio::main]
async fn main() {
    let o = parse();
    if std::env::var_os("RUST_LOG").is_none() {
        // the client's own log (stderr) at warn unless asked otherwise
        std::env::set_var("RUST_LOG", "warn");
    }
    if let Some(ms) = o.rebalance_ms {
        // read by the client's rebalance service when it is created
        std::env::set_var("rocketmq.client.rebalance.waitInterval", ms.to_string());
    }
    let owner = RuntimeOwner::plan(RuntimeConfig { thread_name: "rmqcoord-probe".into(), ..Default::default() })
        .unwrap_or_else(|e| die(1, &format!("runtime: {e}")))
        .build()
        .unwrap_or_else(|e| die(1, &format!("runtime: {e}")));
    let telemetry = rocketmq_observability::install_global(&rocketmq_observability::TelemetryBootstrapConfig::default())
        .unwrap_or_else(|e| die(1, &format!("telemetry: {e}")));
    let rt: Arc<ClientRuntime> =
        ClientRuntime::try_new(owner.root_context().component("client"), ClientRuntimeConfig::default(), telemetry.handle())
            .unwrap_or_else(|e| die(1, &format!("client runtime: {e}")));

    let strat = strategy(&o);
    let mut consumers: Vec<(String, String, DefaultMQPushConsumer)> = Vec::new();
    for i in 0..o.count {
        let name = if o.count == 1 { o.instance.clone() } else { format!("{}-{}", o.instance, i) };
        let mut cfg = ClientConfig::new();
        cfg.set_instance_name(CheetahString::from(name.as_str()));
        if let Some(ip) = &o.client_ip {
            cfg.set_client_ip(CheetahString::from(ip.as_str()));
        }
        if let Some(ms) = o.heartbeat_ms {
            cfg.set_heartbeat_broker_interval(ms);
        }
        if let Some(ms) = o.poll_nameserver_ms {
            cfg.set_poll_name_server_interval(ms);
        }
        let client_id = cfg.build_mq_client_id();
        let holdings = Arc::new(Holdings { instance: name.clone(), client_id: client_id.clone(), by_topic: Mutex::new((HashMap::new(), None)) });
        let mut b = DefaultMQPushConsumer::builder(rt.clone())
            .client_config(cfg)
            .name_server_addr(o.namesrv.clone())
            .consumer_group(o.group.clone())
            .allocate_message_queue_strategy(strat.clone())
            .message_queue_listener(Some(holdings));
        if o.broadcast {
            b = b.message_model(MessageModel::Broadcasting);
        }
        let mut c = b.build();
        if let Err(e) = c.subscribe(o.topic.as_str(), "*").await {
            die(1, &format!("subscribe {}: {e}", o.topic));
        }
        if o.orderly {
            c.register_message_listener_orderly(Quiet);
        } else {
            c.register_message_listener_concurrently(Quiet);
        }
        if let Err(e) = c.start().await {
            for (_, _, c) in consumers.iter_mut() {
                c.shutdown().await;
            }
            die(1, &format!("start {name}: {e}"));
        }
        emit(serde_json::json!({"event": "started", "instance": name, "clientId": client_id}));
        consumers.push((name, client_id, c));
    }

    let (tx, mut rx) = tokio::sync::mpsc::channel::<&'static str>(4);
    let t = tx.clone();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            match line {
                Ok(l) if l.trim() == "stop" => {
                    let _ = t.blocking_send("stop");
                    return;
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let _ = t.blocking_send("eof");
    });
    let t = tx.clone();
    tokio::spawn(async move {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).unwrap();
        tokio::select! {
            _ = term.recv() => { let _ = t.send("SIGTERM").await; }
            _ = tokio::signal::ctrl_c() => { let _ = t.send("SIGINT").await; }
        }
    });
    let mut sub2 = o.subscribe2.clone();
    let sleep = tokio::time::sleep(std::time::Duration::from_millis(o.subscribe2_after_ms));
    tokio::pin!(sleep);
    let why = loop {
        tokio::select! {
            w = rx.recv() => break w.unwrap_or("closed"),
            _ = &mut sleep, if sub2.is_some() => {
                let t2 = sub2.take().unwrap();
                for (name, _, c) in consumers.iter_mut() {
                    if let Err(e) = c.subscribe(t2.as_str(), "*").await {
                        eprintln!("probe-rust: subscribe {t2} on {name}: {e}");
                    }
                }
            }
        }
    };
    eprintln!("probe-rust: stopping ({why})");
    for (name, cid, c) in consumers.iter_mut() {
        c.shutdown().await;
        emit(serde_json::json!({"event": "shutdown", "instance": name, "clientId": cid}));
    }
    let _ = rt.shutdown().await;
    std::process::exit(0);
}
