#!/usr/bin/env python3
"""The C++ test peer of tests/clients: rocketmq-client-cpp push consumers, as
shipped inside two PyPI packages (librocketmq.so with a ctypes binding):
rocketmq-python-cvs 2.1.0.3 (client 2.1.0; bin/probe) and rocketmq 0.4.4
(the 1.x line; bin/probe-cpp1). Same command line and output as the other
probes of tests/clients (see README.md beside this file).

The C API has no holdings accessor: the probe calls the library's own
DefaultMQPushConsumer::getConsumerRunningInfo() (the report the client sends a
broker for GET_CONSUMER_RUNNING_INFO) every 20 ms and reads its mqTable.
"""
import argparse
import ctypes
import json
import os
import queue
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

EXIT_START, EXIT_USAGE, EXIT_UNSUPPORTED = 1, 2, 3
POLL_S = 0.02
OUT_LOCK = threading.Lock()


def emit(ev):
    ev["ts"] = int(time.time() * 1000)
    line = json.dumps(ev, separators=(",", ":"))
    with OUT_LOCK:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def log(msg):
    sys.stderr.write("probe-cpp: %s\n" % msg)
    sys.stderr.flush()


def unsupported(option, detail):
    emit({"event": "unsupported", "option": option, "detail": detail})
    sys.exit(EXIT_UNSUPPORTED)


def parse_args():
    ap = argparse.ArgumentParser(prog="probe", allow_abbrev=False)
    ap.add_argument("--namesrv", required=True)
    ap.add_argument("--group", required=True)
    ap.add_argument("--topic", required=True)
    ap.add_argument("--instance", required=True)
    ap.add_argument("--alloc", default="AVG", choices=[
        "AVG", "AVG_BY_CIRCLE", "CONFIG", "MACHINE_ROOM", "MACHINE_ROOM_NEARBY", "CONSISTENT_HASH"])
    ap.add_argument("--client-ip")
    ap.add_argument("--broadcast", action="store_true")
    ap.add_argument("--orderly", action="store_true")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--subscribe2")
    ap.add_argument("--subscribe2-after-ms", type=int)
    ap.add_argument("--heartbeat-ms", type=int)
    ap.add_argument("--rebalance-ms", type=int)
    ap.add_argument("--poll-nameserver-ms", type=int)
    a = ap.parse_args()
    if a.alloc != "AVG":
        unsupported("--alloc", "rocketmq-client-cpp rebalances with AVG only")
    if a.client_ip is not None:
        unsupported("--client-ip", "the C API has no client IP setting")
    for opt in ("heartbeat_ms", "rebalance_ms", "poll_nameserver_ms"):
        if getattr(a, opt) is not None:
            unsupported("--" + opt.replace("_", "-"), "the C API has no period settings")
    if a.subscribe2 is not None or a.subscribe2_after_ms is not None:
        unsupported("--subscribe2", "subscriptions made after start are not used by this client")
    if a.count < 1:
        ap.error("--count must be >= 1")
    return a


class Lib:
    """The C API plus the few C++ entry points the probe needs, for the two
    library lines the PyPI wheels ship:
      1.x (PyPI rocketmq 0.4.4): pre-C++11 libstdc++ ABI, std::string is one
          pointer to its characters; the C handle is the DefaultMQPushConsumer.
      2.x (PyPI rocketmq-python-cvs 2.1.0.3, rocketmq-client-cpp 2.1.0): C++11
          ABI, std::string is {pointer, length, 16-byte buffer}; the C handle is
          a facade whose second word is the DefaultMQPushConsumerImpl (checked
          against that class's vtable before use).
    A std::string result comes back through a hidden first argument."""

    def __init__(self):
        from rocketmq import client  # sets up the C API's argtypes
        self.client = client
        d = client.dll
        self.dll = d
        std = ctypes.CDLL("libstdc++.so.6")
        try:
            self.get_running_info = d._ZN8rocketmq25DefaultMQPushConsumerImpl22getConsumerRunningInfoEv
            self.flavor = 2
        except AttributeError:
            self.get_running_info = d._ZN8rocketmq21DefaultMQPushConsumer22getConsumerRunningInfoEv
            self.flavor = 1
        if self.flavor == 2:
            self.encode = d._ZN8rocketmq19ConsumerRunningInfo6encodeB5cxx11Ev
            self.client_id = d._ZNK8rocketmq15DefaultMQClient13getMQClientIdB5cxx11Ev
            self.string_dtor = std._ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEED1Ev
            self.impl_vptr = ctypes.addressof(
                ctypes.c_void_p.in_dll(d, "_ZTVN8rocketmq25DefaultMQPushConsumerImplE")) + 16
            self.string_size = 32
        else:
            self.encode = d._ZN8rocketmq19ConsumerRunningInfo6encodeEv
            self.client_id = d._ZNK8rocketmq8MQClient13getMQClientIdEv
            self.string_dtor = std._ZNSsD1Ev
            self.string_size = 8
        self.get_running_info.restype = ctypes.c_void_p
        self.get_running_info.argtypes = [ctypes.c_void_p]
        for f in (self.encode, self.client_id):
            f.restype = None
            f.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        self.delete_info = d._ZN8rocketmq19ConsumerRunningInfoD0Ev
        self.delete_info.restype = None
        self.delete_info.argtypes = [ctypes.c_void_p]
        self.string_dtor.restype = None
        self.string_dtor.argtypes = [ctypes.c_void_p]

    def consumer_object(self, handle):
        """The C++ object the entry points take, from the C API handle."""
        if self.flavor == 1:
            return handle
        impl = ctypes.c_void_p.from_address(handle + 8).value
        if not impl or ctypes.c_void_p.from_address(impl).value != self.impl_vptr:
            raise RuntimeError("unexpected DefaultMQPushConsumer layout in this librocketmq.so")
        return impl

    # DefaultMQPushConsumerImpl::shutdown() calls shutdownMessageTraceInnerProducer(),
    # which calls through the producer pointer at this offset without a NULL check
    # (read from the disassembly of the hash-pinned 2.1.0 library).
    TRACE_PRODUCER_OFFSET = 0x298

    def shutdown_would_crash(self, obj):
        if self.flavor != 2:
            return False
        return not ctypes.c_void_p.from_address(obj + self.TRACE_PRODUCER_OFFSET).value

    def take_string(self, fn, this):
        buf = (ctypes.c_char * self.string_size)()
        fn(buf, this)
        try:
            ptr = ctypes.c_void_p.from_buffer(buf).value
            if self.flavor == 2:
                data = ctypes.string_at(ptr, ctypes.c_size_t.from_buffer(buf, 8).value)
            else:
                data = ctypes.string_at(ptr)
            return data.decode("utf-8", "replace")
        finally:
            self.string_dtor(buf)

    def running_info(self, obj):
        info = self.get_running_info(obj)
        if not info:
            return ""
        try:
            return self.take_string(self.encode, info)
        finally:
            self.delete_info(info)


# mqTable keys are MessageQueue objects written as JSON objects (not valid
# JSON as a whole); each is followed by its ProcessQueueInfo with "droped".
MQ_RE = re.compile(
    r'\{\s*"brokerName"\s*:\s*"([^"]*)"\s*,\s*"queueId"\s*:\s*(\d+)\s*,\s*"topic"\s*:\s*"([^"]*)"\s*\}\s*:\s*'
    r'\{[^{}]*?"droped"\s*:\s*(true|false)')


def held_queues(text):
    qs = set()
    table = text.split('"mqTable"', 1)[-1]
    for broker, qid, topic, dropped in MQ_RE.findall(table):
        if dropped == "false":
            qs.add((topic, broker, int(qid)))
    return [{"topic": t, "broker": b, "queueId": q} for t, b, q in sorted(qs)]


class Consumer:
    def __init__(self, lib, a, instance, logdir):
        c = lib.client
        model = c.MessageModel.BROADCASTING if a.broadcast else c.MessageModel.CLUSTERING
        self.lib = lib
        self.instance = instance
        self.pc = c.PushConsumer(a.group, orderly=a.orderly, message_model=model)
        self.pc.set_namesrv_addr(a.namesrv)
        self.pc.set_instance_name(instance)
        lib.dll.SetPushConsumerLogPath(self.pc._handle, logdir.encode())  # honoured by 2.x
        lib.dll.SetPushConsumerLogLevel(self.pc._handle, 3)  # WARN
        self.pc.subscribe(a.topic, lambda msg: None)
        self.client_id = None
        self.last = None
        self.running = False

    def start(self):
        self.pc.start()
        self.obj = self.lib.consumer_object(self.pc._handle)
        self.running = True
        self.client_id = self.lib.take_string(self.lib.client_id, self.obj)

    def poll(self):
        if not self.running:
            return
        qs = held_queues(self.lib.running_info(self.obj))
        if qs != self.last:
            self.last = qs
            emit({"event": "holdings", "instance": self.instance, "clientId": self.client_id, "queues": qs})

    def shutdown(self):
        if self.running:
            self.running = False
            if self.lib.shutdown_would_crash(self.obj):
                log("%s: not calling ShutdownPushConsumer: this 2.1.0 build dereferences its "
                    "message-trace producer unconditionally there, which is NULL without trace "
                    "(SIGSEGV); the connections close when the process exits" % self.instance)
            else:
                self.pc.shutdown()
            emit({"event": "shutdown", "instance": self.instance, "clientId": self.client_id})
        # the wrapper's destructor would shut down again: the process exits instead
        self.pc._handle = None


def drain_logs(logdir):
    """The client logs to files (WARN and up here): copy them to stderr, remove them."""
    for root, _, files in os.walk(logdir):
        for f in sorted(files):
            try:
                with open(os.path.join(root, f), errors="replace") as fh:
                    for line in fh:
                        sys.stderr.write("cpp-client: " + line)
            except OSError:
                pass
    shutil.rmtree(logdir, ignore_errors=True)


def main():
    a = parse_args()
    own_logdir = not os.environ.get("RMQCOORD_CPP_LOG_DIR")
    logdir = os.environ.get("RMQCOORD_CPP_LOG_DIR") or tempfile.mkdtemp(prefix="rmqcoord-cpp-probe-")
    # The library writes its logs (and broadcast offsets) under $HOME/logs/rocketmq-cpp,
    # whatever SetPushConsumerLogPath says: point HOME at the log folder first.
    os.environ["HOME"] = logdir
    try:
        lib = Lib()
    except (ImportError, OSError, AttributeError) as e:
        log("cannot load rocketmq-client-cpp: %s" % e)
        return EXIT_START
    names = [a.instance] if a.count == 1 else ["%s-%d" % (a.instance, i) for i in range(a.count)]
    consumers = []
    stop = queue.Queue()
    signal.signal(signal.SIGTERM, lambda *_: stop.put("SIGTERM"))
    signal.signal(signal.SIGINT, lambda *_: stop.put("SIGINT"))

    def stdin_reader():
        for line in sys.stdin:
            if line.strip() == "stop":
                stop.put("stop")
                return
        stop.put("eof")

    try:
        for n in names:
            c = Consumer(lib, a, n, logdir)
            consumers.append(c)
            c.start()
            emit({"event": "started", "instance": n, "clientId": c.client_id})
    except Exception as e:  # the wrapper raises its own exception types
        log("start failed: %s" % e)
        for c in consumers:
            c.shutdown()
        sys.stdout.flush()
        os._exit(EXIT_START)

    threading.Thread(target=stdin_reader, daemon=True).start()
    why = None
    while why is None:
        for c in consumers:
            c.poll()
        try:
            why = stop.get(timeout=POLL_S)
        except queue.Empty:
            pass
    log("stopping (%s)" % why)
    for c in consumers:
        c.poll()
    for c in consumers:
        c.shutdown()
    sys.stdout.flush()
    if own_logdir:
        drain_logs(logdir)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
