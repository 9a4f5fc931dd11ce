// The Go test peer of tests/clients: real rocketmq-client-go v2 push
// consumers pointed at a name server, reporting what they hold as JSON Lines
// on stdout. Same command line and output as the other probes of
// tests/clients (see README.md beside this file).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/apache/rocketmq-client-go/v2/consumer"
	"github.com/apache/rocketmq-client-go/v2/primitive"
	"github.com/apache/rocketmq-client-go/v2/rlog"
)

// Exit codes: 0 clean shutdown, 1 start failure, 2 bad command line,
// 3 an option this client cannot honour.
const (
	exitStart       = 1
	exitUsage       = 2
	exitUnsupported = 3
	pollEvery       = 20 * time.Millisecond
	// env var read by the client's package init for broadcast offsets
	localOffsetDirEnv = "rocketmq.client.localOffsetStoreDir"
	// set by this probe when it re-executes itself with a private offset dir
	ownOffsetDirEnv = "RMQCOORD_GO_PROBE_OFFSET_DIR"
)

var (
	// the private broadcast offset folder this process removes at exit, if any
	ownOffsetDir string
	outMu        sync.Mutex
	out          = bufio.NewWriter(os.Stdout)
)

func emit(v map[string]interface{}) {
	v["ts"] = time.Now().UnixMilli()
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	outMu.Lock()
	out.Write(b)
	out.WriteByte('\n')
	out.Flush()
	outMu.Unlock()
}

// exit removes this process's private offset folder, then exits.
func exit(code int) {
	if ownOffsetDir != "" {
		os.RemoveAll(ownOffsetDir)
	}
	os.Exit(code)
}

func logf(format string, a ...interface{}) {
	fmt.Fprintf(os.Stderr, "probe-go: "+format+"\n", a...)
}

type options struct {
	namesrv, group, topic, instance, alloc, clientIP string
	broadcast, orderly                               bool
	count                                            int
	subscribe2                                       string
	subscribe2AfterMs                                int
	heartbeatMs, rebalanceMs, pollNameserverMs       int
	config, consumerIdcs                             string
	virtualNodes                                     int
	reportAllocate                                   bool
}

func parseArgs() *options {
	o := &options{}
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	fs.StringVar(&o.namesrv, "namesrv", "", "name server HOST:PORT")
	fs.StringVar(&o.group, "group", "", "consumer group")
	fs.StringVar(&o.topic, "topic", "", "topic to subscribe (tag *)")
	fs.StringVar(&o.instance, "instance", "", "instance name (with --count K: NAME-0..NAME-K-1)")
	fs.StringVar(&o.alloc, "alloc", "AVG", "AVG|AVG_BY_CIRCLE|CONFIG|MACHINE_ROOM|MACHINE_ROOM_NEARBY|CONSISTENT_HASH")
	fs.StringVar(&o.clientIP, "client-ip", "", "client IP part of the client id")
	fs.BoolVar(&o.broadcast, "broadcast", false, "BROADCASTING message model")
	fs.BoolVar(&o.orderly, "orderly", false, "orderly consumer")
	fs.IntVar(&o.count, "count", 1, "consumers in this process")
	fs.StringVar(&o.subscribe2, "subscribe2", "", "second topic, subscribed after --subscribe2-after-ms")
	fs.IntVar(&o.subscribe2AfterMs, "subscribe2-after-ms", 0, "delay before subscribing --subscribe2")
	fs.IntVar(&o.heartbeatMs, "heartbeat-ms", 0, "heartbeat period (not settable in this client)")
	fs.IntVar(&o.rebalanceMs, "rebalance-ms", 0, "rebalance period (not settable in this client)")
	fs.IntVar(&o.pollNameserverMs, "poll-nameserver-ms", 0, "route poll period (not settable in this client)")
	// Strategy parameters (same syntax as the admin API's allocation route).
	fs.StringVar(&o.config, "config", "", "CONFIG: the queues to take, brokerName:queueId,... of --topic")
	fs.StringVar(&o.consumerIdcs, "consumer-idcs", "", "MACHINE_ROOM: rooms A,B (broker names room@name)")
	fs.IntVar(&o.virtualNodes, "virtual-nodes", 10, "CONSISTENT_HASH virtual nodes")
	// Options of the probe spec this client does not have: accepted here so
	// the probe can say so ({"event":"unsupported"}, exit 3) instead of a flag error.
	var litePull, heartbeatV2 bool
	var serialize string
	fs.BoolVar(&litePull, "lite-pull", false, "lite pull consumer (not in rocketmq-client-go v2)")
	fs.StringVar(&serialize, "serialize", "", "JSON|ROCKETMQ header serialization (not settable in this client)")
	fs.BoolVar(&heartbeatV2, "heartbeat-v2", false, "5.x heartbeat v2 (not in rocketmq-client-go v2)")
	fs.BoolVar(&o.reportAllocate, "report-allocate", false,
		"also print {\"event\":\"allocate\"} for every call of the strategy (its cidAll and result)")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(exitUsage)
	}
	if fs.NArg() > 0 {
		logf("unexpected argument %q", fs.Arg(0))
		os.Exit(exitUsage)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	unsupported := map[string]string{
		"lite-pull":    "rocketmq-client-go v2 has no lite pull consumer",
		"serialize":    "rocketmq-client-go v2 always sends JSON headers",
		"heartbeat-v2": "rocketmq-client-go v2 has no heartbeat v2",
	}
	for _, name := range []string{"lite-pull", "serialize", "heartbeat-v2"} {
		if set[name] && !(name == "serialize" && serialize == "JSON") { // JSON is what it sends anyway
			option := "--" + name
			if name == "serialize" {
				option += " " + serialize
			}
			emit(map[string]interface{}{"event": "unsupported", "option": option, "detail": unsupported[name]})
			os.Exit(exitUnsupported)
		}
	}

	// The Go client's heartbeat (30 s), route poll (30 s) and rebalance
	// (20 s) periods are package constants: there is no way to change them.
	for _, name := range []string{"heartbeat-ms", "rebalance-ms", "poll-nameserver-ms"} {
		if set[name] {
			emit(map[string]interface{}{"event": "unsupported", "option": "--" + name,
				"detail": "rocketmq-client-go v2 has fixed heartbeat/route/rebalance periods"})
			os.Exit(exitUnsupported)
		}
	}
	if o.namesrv == "" || o.group == "" || o.topic == "" || o.instance == "" {
		logf("--namesrv, --group, --topic and --instance are required")
		os.Exit(exitUsage)
	}
	if o.count < 1 {
		logf("--count must be >= 1")
		os.Exit(exitUsage)
	}
	if set["subscribe2-after-ms"] && o.subscribe2 == "" {
		logf("--subscribe2-after-ms needs --subscribe2")
		os.Exit(exitUsage)
	}
	switch o.alloc {
	case "AVG", "AVG_BY_CIRCLE", "CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH":
	default:
		logf("unknown --alloc %q", o.alloc)
		os.Exit(exitUsage)
	}
	return o
}

func strategy(o *options) (consumer.AllocateStrategy, error) {
	switch o.alloc {
	case "AVG":
		return consumer.AllocateByAveragely, nil
	case "AVG_BY_CIRCLE":
		return consumer.AllocateByAveragelyCircle, nil
	case "MACHINE_ROOM_NEARBY":
		// the Go client's nearby strategy takes no resolver (it is Averagely)
		return consumer.AllocateByMachineNearby, nil
	case "CONSISTENT_HASH":
		return consumer.AllocateByConsistentHash(o.virtualNodes), nil
	case "MACHINE_ROOM":
		var rooms []string
		for _, r := range strings.Split(o.consumerIdcs, ",") {
			if r = strings.TrimSpace(r); r != "" {
				rooms = append(rooms, r)
			}
		}
		return consumer.AllocateByMachineRoom(rooms), nil
	case "CONFIG":
		var list []*primitive.MessageQueue
		for _, item := range strings.Split(o.config, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			i := strings.LastIndex(item, ":")
			if i <= 0 {
				return nil, fmt.Errorf("--config item %q is not brokerName:queueId", item)
			}
			qid, err := strconv.Atoi(item[i+1:])
			if err != nil {
				return nil, fmt.Errorf("--config item %q: %v", item, err)
			}
			list = append(list, &primitive.MessageQueue{Topic: o.topic, BrokerName: item[:i], QueueId: qid})
		}
		return consumer.AllocateByConfig(list), nil
	}
	return nil, fmt.Errorf("unknown strategy %q", o.alloc)
}

// withClientIP sets ClientOptions.ClientIP, which the client exposes through
// no Option: consumer.Option is func(*consumerOptions) with an unexported
// parameter type, so the function is built by reflection.
func withClientIP(ip string) consumer.Option {
	t := reflect.TypeOf(consumer.Option(nil))
	fn := reflect.MakeFunc(t, func(args []reflect.Value) []reflect.Value {
		f := args[0].Elem().FieldByName("ClientIP")
		if f.IsValid() && f.CanSet() {
			f.SetString(ip)
		} else {
			logf("cannot set ClientIP on this client version")
		}
		return nil
	})
	return fn.Interface().(consumer.Option)
}

// field returns a usable view of an unexported struct field.
func field(v reflect.Value, name string) (reflect.Value, bool) {
	f := v.FieldByName(name)
	if !f.IsValid() || !f.CanAddr() {
		return reflect.Value{}, false
	}
	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), true
}

type probe struct {
	instance string
	clientID string
	pc       interface {
		Start() error
		Shutdown() error
		Subscribe(string, consumer.MessageSelector, func(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error)) error
	}
	table   *sync.Map // the client's processQueueTable: primitive.MessageQueue -> *processQueue
	last    string
	started bool
}

type queue struct {
	Topic   string `json:"topic"`
	Broker  string `json:"broker"`
	QueueID int    `json:"queueId"`
}

func (p *probe) holdings() ([]queue, string) {
	qs := []queue{}
	p.table.Range(func(k, _ interface{}) bool {
		if mq, ok := k.(primitive.MessageQueue); ok {
			qs = append(qs, queue{mq.Topic, mq.BrokerName, mq.QueueId})
		}
		return true
	})
	sort.Slice(qs, func(i, j int) bool {
		a, b := qs[i], qs[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		if a.Broker != b.Broker {
			return a.Broker < b.Broker
		}
		return a.QueueID < b.QueueID
	})
	key, _ := json.Marshal(qs)
	return qs, string(key)
}

func (p *probe) poll() {
	qs, key := p.holdings()
	if key == p.last {
		return
	}
	p.last = key
	emit(map[string]interface{}{"event": "holdings", "instance": p.instance, "clientId": p.clientID, "queues": qs})
}

// traced wraps a strategy so that every call the client makes (on NOTIFY, on
// its timer, at start) is reported with the consumer list it used.
func traced(inner consumer.AllocateStrategy, instance string) consumer.AllocateStrategy {
	return func(group, cid string, mqAll []*primitive.MessageQueue, cidAll []string) []*primitive.MessageQueue {
		res := inner(group, cid, mqAll, cidAll)
		topic := ""
		if len(mqAll) > 0 {
			topic = mqAll[0].Topic
		}
		qs := make([]queue, 0, len(res))
		for _, mq := range res {
			qs = append(qs, queue{mq.Topic, mq.BrokerName, mq.QueueId})
		}
		emit(map[string]interface{}{"event": "allocate", "instance": instance, "clientId": cid,
			"topic": topic, "mqAll": len(mqAll), "cidAll": append([]string{}, cidAll...), "queues": qs})
		return res
	}
}

func consume(context.Context, ...*primitive.MessageExt) (consumer.ConsumeResult, error) {
	return consumer.ConsumeSuccess, nil
}

func newProbe(o *options, instance string, strat consumer.AllocateStrategy) (*probe, error) {
	opts := []consumer.Option{
		consumer.WithGroupName(o.group),
		consumer.WithNsResolver(primitive.NewPassthroughResolver([]string{o.namesrv})),
		consumer.WithInstance(instance),
		consumer.WithStrategy(strat),
	}
	if o.reportAllocate {
		opts[len(opts)-1] = consumer.WithStrategy(traced(strat, instance))
	}
	if o.broadcast {
		opts = append(opts, consumer.WithConsumerModel(consumer.BroadCasting))
	}
	if o.orderly {
		opts = append(opts, consumer.WithConsumerOrder(true))
	}
	if o.clientIP != "" {
		opts = append(opts, withClientIP(o.clientIP))
	}
	pc, err := consumer.NewPushConsumer(opts...)
	if err != nil {
		return nil, err
	}
	p := &probe{instance: instance, pc: pc}

	dc := reflect.ValueOf(pc).Elem().FieldByName("defaultConsumer")
	if !dc.IsValid() || dc.IsNil() {
		return nil, fmt.Errorf("this client version has no pushConsumer.defaultConsumer")
	}
	tv, ok := field(dc.Elem(), "processQueueTable")
	if !ok || tv.Type() != reflect.TypeOf(sync.Map{}) {
		return nil, fmt.Errorf("this client version has no defaultConsumer.processQueueTable sync.Map")
	}
	p.table = tv.Addr().Interface().(*sync.Map)
	cv, ok := field(dc.Elem(), "client")
	if !ok {
		return nil, fmt.Errorf("this client version has no defaultConsumer.client")
	}
	if c, ok := cv.Interface().(interface{ ClientID() string }); ok {
		p.clientID = c.ClientID()
	}
	if err := pc.Subscribe(o.topic, consumer.MessageSelector{}, consume); err != nil {
		return nil, err
	}
	return p, nil
}

// A broadcasting consumer keeps its offsets in a local file whose folder the
// client reads from its environment at package init ($HOME by default). Unless
// the caller chose one, re-run this program with a private temporary folder,
// removed at exit.
func privateOffsetDir(o *options) {
	if !o.broadcast || os.Getenv(localOffsetDirEnv) != "" {
		return
	}
	dir, err := os.MkdirTemp("", "rmqcoord-go-probe-")
	if err != nil {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		os.RemoveAll(dir)
		return
	}
	env := append(os.Environ(), localOffsetDirEnv+"="+dir, ownOffsetDirEnv+"="+dir)
	if err := syscall.Exec(exe, os.Args, env); err != nil {
		os.RemoveAll(dir)
		logf("re-exec for a private offset folder failed: %v", err)
	}
}

func main() {
	o := parseArgs()
	privateOffsetDir(o)
	if d := os.Getenv(ownOffsetDirEnv); d != "" && strings.Contains(filepath.Base(d), "rmqcoord-go-probe-") {
		ownOffsetDir = d
		defer os.RemoveAll(d)
	}
	level := os.Getenv("ROCKETMQ_GO_LOG_LEVEL")
	if level == "" {
		level = "warn"
	}
	rlog.SetLogLevel(level)

	strat, err := strategy(o)
	if err != nil {
		logf("%v", err)
		exit(exitUsage)
	}

	var probes []*probe
	for i := 0; i < o.count; i++ {
		name := o.instance
		if o.count > 1 {
			name = fmt.Sprintf("%s-%d", o.instance, i)
		}
		p, err := newProbe(o, name, strat)
		if err != nil {
			logf("consumer %s: %v", name, err)
			shutdownAll(probes)
			exit(exitStart)
		}
		probes = append(probes, p)
	}

	var mu sync.Mutex // serializes polls with shutdown
	for _, p := range probes {
		if err := p.pc.Start(); err != nil {
			logf("start %s: %v", p.instance, err)
			mu.Lock()
			shutdownAll(probes)
			mu.Unlock()
			exit(exitStart)
		}
		p.started = true
		emit(map[string]interface{}{"event": "started", "instance": p.instance, "clientId": p.clientID})
	}

	stop := make(chan string, 4)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() { s := <-sigs; stop <- s.String() }()
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			if strings.TrimSpace(sc.Text()) == "stop" {
				stop <- "stop"
				return
			}
		}
		stop <- "eof"
	}()

	var sub2 <-chan time.Time
	if o.subscribe2 != "" {
		sub2 = time.After(time.Duration(o.subscribe2AfterMs) * time.Millisecond)
	}
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		select {
		case why := <-stop:
			logf("stopping (%s)", why)
			mu.Lock()
			for _, p := range probes {
				if p.started {
					p.poll()
				}
			}
			shutdownAll(probes)
			mu.Unlock()
			return
		case <-sub2:
			sub2 = nil
			for _, p := range probes {
				// The Go client only records the subscription: its next
				// route poll and heartbeat carry it (no immediate heartbeat).
				if err := p.pc.Subscribe(o.subscribe2, consumer.MessageSelector{}, consume); err != nil {
					logf("subscribe %s on %s: %v", o.subscribe2, p.instance, err)
				}
			}
			logf("subscribed %s", o.subscribe2)
		case <-tick.C:
			mu.Lock()
			for _, p := range probes {
				p.poll()
			}
			mu.Unlock()
		}
	}
}

func shutdownAll(probes []*probe) {
	for _, p := range probes {
		if !p.started {
			continue
		}
		if err := p.pc.Shutdown(); err != nil {
			logf("shutdown %s: %v", p.instance, err)
		}
		emit(map[string]interface{}{"event": "shutdown", "instance": p.instance, "clientId": p.clientID})
	}
}
