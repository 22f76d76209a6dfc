#!/usr/bin/env python3
"""OpenWhisk as clusters run it, on one machine: the scheduler path with two invokers.

    cluster.py up --openwhisk DIR [--classpath FILE] --executor BIN [--js-engine WASM]
                  [--factory wasm|mixed] [--invokers N] [--work DIR] [--docker-host URL]
    cluster.py down [--work DIR]
    cluster.py status [--work DIR]
    cluster.py executor stop|start INDEX [EXECUTOR ARGS...] [--work DIR]
    cluster.py executors stop|start [EXECUTOR ARGS...] [--work DIR]

`up` starts, each as its own process on 127.0.0.1: Kafka (KRaft, no ZooKeeper; its jars from
Maven Central), etcd (built with Go from the module proxy), a CouchDB-API store (pouchdb-server
from npm, in memory), OpenWhisk's controller (FPCPoolBalancer), its scheduler, and N invokers
(FPCInvokerReactive, default 2), each with its own wasm-executor. DIR is an OpenWhisk source
tree with openwhisk-patch/apply.sh applied; its classes come from --classpath FILE (a Java
classpath in one line, e.g. of a Maven build of the tree) or else from Gradle's
`core/{controller,scheduler,invoker}/build/install/*/lib` in DIR. The tree's ansible/files
provide the store's design documents and the guest and whisk.system keys.

--factory wasm gives every container to the executor (which must then run the invokers' health
action, kind nodejs:default: --js-engine); mixed runs wasm:0.1 and nodejs in the executor and
blackbox images in Docker (--docker-host: an engine the invokers' `docker` CLI reaches).

Everything lives under --work (default: target/cluster of this repository): downloaded tools,
configuration, logs (logs/*.log), pid files. `down` stops every process `up` started.
`executor stop|start INDEX` stops or starts invoker INDEX's executor, e.g. to watch its invoker
turn unhealthy and recover; `executors` does it to all of them (openwhisk-patch/verify/matrix.py's
--executor). The API is http://127.0.0.1:<controller port> (printed by `up`)
with the guest key of the tree's ansible/files/auth.guest.
"""

import argparse
import base64
import glob
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))

KAFKA_VERSION = "3.9.1"  # the broker of the kafka-clients OpenWhisk master uses
ETCD_VERSION = "v3.6.16"
POUCHDB_SERVER_VERSION = "4.2.0"
KRYO_VERSION = "5.6.2"

PORTS = {
    "kafka": 9392, "kafka-controller": 9393, "etcd": 9394, "etcd-peer": 9395, "store": 9396,
    "controller": 9397, "controller-pekko": 9398, "scheduler": 9399, "scheduler-rpc": 9400,
    "scheduler-pekko": 9401,
}
INVOKER_PORT, EXECUTOR_PORT = 9402, 9412  # + index
DB_USER, DB_PASS = "whisk_admin", "some_passw0rd"
DB_PREFIX = "whisk_local_"


def log(msg):
    print(f"cluster.py: {msg}", flush=True)


def die(msg):
    print(f"cluster.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


# ----------------------------------------------------------------------------------- processes
class Work:
    def __init__(self, root):
        self.root = os.path.abspath(root)
        for d in ("logs", "run", "tools", "conf", "state"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)

    def path(self, *parts):
        return os.path.join(self.root, *parts)

    def pidfile(self, name):
        return self.path("run", name + ".pid")

    def start(self, name, argv, env=None, cwd=None):
        if self.alive(name):
            log(f"{name} already runs (pid {self.pid(name)})")
            return
        logf = open(self.path("logs", name + ".log"), "ab")
        proc = subprocess.Popen(argv, stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})}, cwd=cwd or self.root,
                                start_new_session=True)
        with open(self.pidfile(name), "w") as f:
            f.write(str(proc.pid))
        log(f"{name}: pid {proc.pid}, log {self.path('logs', name + '.log')}")

    def pid(self, name):
        try:
            return int(open(self.pidfile(name)).read())
        except (OSError, ValueError):
            return None

    def alive(self, name):
        pid = self.pid(name)
        if pid is None:
            return False
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False

    def stop(self, name, grace=20):
        pid = self.pid(name)
        if pid is not None and self.alive(name):
            try:
                os.killpg(pid, signal.SIGTERM)
            except OSError:
                pass
            deadline = time.time() + grace
            while self.alive(name) and time.time() < deadline:
                time.sleep(0.2)
            if self.alive(name):
                os.killpg(pid, signal.SIGKILL)
            log(f"{name}: stopped")
        if os.path.exists(self.pidfile(name)):
            os.unlink(self.pidfile(name))

    def names(self):
        return sorted(os.path.basename(p)[:-4] for p in glob.glob(self.path("run", "*.pid")))


def wait_for(what, check, seconds=180, work=None, name=None):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if name and work and not work.alive(name):
            die(f"{what} exited; see {work.path('logs', name + '.log')}")
        try:
            if check():
                log(f"{what}: ready")
                return
        except Exception:
            pass
        time.sleep(1)
    die(f"{what} not ready after {seconds} s" + (f"; see {work.path('logs', name + '.log')}" if work else ""))


def http(method, url, body=None, auth=None, timeout=10):
    data = None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    if auth:
        req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError:  # refused, reset, timed out: nobody answering
        return 0, b""


def port_open(port):
    import socket
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


# ---------------------------------------------------------------------------------- the services
def kafka_jars(work):
    lib = work.path("tools", f"kafka-{KAFKA_VERSION}")
    if not glob.glob(os.path.join(lib, "kafka_2.13-*.jar")):
        pom = work.path("tools", "kafka-pom.xml")
        with open(pom, "w") as f:
            f.write(f"""<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>local</groupId><artifactId>kafka-broker</artifactId><version>1</version><packaging>pom</packaging>
<dependencies>
<dependency><groupId>org.apache.kafka</groupId><artifactId>kafka_2.13</artifactId><version>{KAFKA_VERSION}</version></dependency>
<dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
</dependencies></project>""")
        log(f"fetching Kafka {KAFKA_VERSION} from Maven Central")
        subprocess.run(["mvn", "-B", "-q", "-f", pom, "dependency:copy-dependencies", f"-DoutputDirectory={lib}"],
                       check=True)
    return lib


def start_kafka(work):
    lib = kafka_jars(work)
    data = work.path("state", "kafka")
    props = work.path("conf", "kafka.properties")
    with open(props, "w") as f:
        f.write(f"""process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:{PORTS['kafka-controller']}
listeners=PLAINTEXT://127.0.0.1:{PORTS['kafka']},CONTROLLER://127.0.0.1:{PORTS['kafka-controller']}
advertised.listeners=PLAINTEXT://127.0.0.1:{PORTS['kafka']}
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
log.dirs={data}
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
num.partitions=1
group.initial.rebalance.delay.ms=0
""")
    log4j = work.path("conf", "kafka-log4j.properties")
    with open(log4j, "w") as f:
        f.write("log4j.rootLogger=WARN, stdout\nlog4j.appender.stdout=org.apache.log4j.ConsoleAppender\n"
                "log4j.appender.stdout.layout=org.apache.log4j.PatternLayout\n"
                "log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
                "log4j.logger.kafka.server.KafkaRaftServer=INFO\n")
    java = ["java", "-Xms256m", "-Xmx512m", "-cp", os.path.join(lib, "*"), f"-Dlog4j.configuration=file:{log4j}"]
    if not os.path.exists(os.path.join(data, "meta.properties")):
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        subprocess.run(java + ["kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", props], check=True,
                       stdout=subprocess.DEVNULL)
    work.start("kafka", java + ["kafka.Kafka", props])
    wait_for("kafka", lambda: port_open(PORTS["kafka"]), work=work, name="kafka")


def etcd_binary(work):
    binary = work.path("tools", f"etcd-{ETCD_VERSION}", "etcd")
    if not os.path.exists(binary):
        src = os.path.dirname(binary)
        os.makedirs(src, exist_ok=True)
        with open(os.path.join(src, "main.go"), "w") as f:
            f.write('package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\n'
                    "func main() { etcdmain.Main(os.Args) }\n")
        with open(os.path.join(src, "go.mod"), "w") as f:
            f.write("module local/etcd\n\ngo 1.24\n")
        log(f"building etcd {ETCD_VERSION} from the Go module proxy")
        subprocess.run(["go", "get", f"go.etcd.io/etcd/server/v3@{ETCD_VERSION}"], cwd=src, check=True)
        subprocess.run(["go", "build", "-o", "etcd", "."], cwd=src, check=True)
    return binary


def start_etcd(work):
    binary = etcd_binary(work)
    client, peer = f"http://127.0.0.1:{PORTS['etcd']}", f"http://127.0.0.1:{PORTS['etcd-peer']}"
    work.start("etcd", [binary, "--name", "etcd0", "--data-dir", work.path("state", "etcd"),
                        "--listen-client-urls", client, "--advertise-client-urls", client,
                        "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                        "--initial-cluster", f"etcd0={peer}", "--log-level", "warn"])
    wait_for("etcd", lambda: http("GET", f"{client}/health")[0] == 200, work=work, name="etcd")


def start_store(work, openwhisk):
    tool = work.path("tools", f"pouchdb-server-{POUCHDB_SERVER_VERSION}")
    binary = os.path.join(tool, "node_modules", ".bin", "pouchdb-server")
    if not os.path.exists(binary):
        os.makedirs(tool, exist_ok=True)
        log(f"installing pouchdb-server {POUCHDB_SERVER_VERSION} from npm")
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--prefix", tool,
                        f"pouchdb-server@{POUCHDB_SERVER_VERSION}"], check=True, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{PORTS['store']}"
    work.start("store", ["node", os.path.join(HERE, "store.js"), str(PORTS["store"]), work.path("state")],
               env={"NODE_PATH": os.path.join(tool, "node_modules")})
    wait_for("store", lambda: http("GET", base + "/")[0] == 200, work=work, name="store")
    init_store(base, openwhisk)


def doc_path(doc_id):
    """A document's id in a URL: `guest/limits` is one id, not an attachment of `guest`."""
    if doc_id.startswith("_design/"):
        return "_design/" + urllib.parse.quote(doc_id[len("_design/"):], safe="")
    return urllib.parse.quote(doc_id, safe="")


def init_store(base, openwhisk):
    """What ansible's initdb and wipe playbooks do: databases, design documents, keys."""
    http("PUT", f"{base}/_config/admins/{DB_USER}", json.dumps(DB_PASS).encode())
    auth = f"{DB_USER}:{DB_PASS}"
    files = os.path.join(openwhisk, "ansible", "files")

    def doc(name):
        return json.load(open(os.path.join(files, name)))

    dbs = {
        "subjects": ["auth_design_document_for_subjects_db_v2.0.0.json", "filter_design_document.json",
                     "namespace_throttlings_design_document_for_subjects_db.json"],
        "whisks": ["whisks_design_document_for_entities_db_v2.1.0.json", "filter_design_document.json"],
        "activations": ["whisks_design_document_for_activations_db_v2.1.0.json",
                        "whisks_design_document_for_activations_db_filters_v2.1.1.json",
                        "filter_design_document.json", "activations_design_document_for_activations_db.json",
                        "logCleanup_design_document_for_activations_db.json"],
    }
    for db, ddocs in dbs.items():
        status, body = http("PUT", f"{base}/{DB_PREFIX}{db}", auth=auth)
        if status not in (201, 412):
            die(f"store: creating {DB_PREFIX}{db}: HTTP {status} {body[:200]}")
        for name in ddocs:
            d = doc(name)
            status, body = http("PUT", f"{base}/{DB_PREFIX}{db}/{doc_path(d['_id'])}", d, auth=auth)
            if status not in (201, 409):
                die(f"store: {name}: HTTP {status} {body[:200]}")
    for subject in ("guest", "whisk.system"):
        key = open(os.path.join(files, f"auth.{subject}")).read().strip()
        u, k = key.split(":")
        d = {"_id": subject, "subject": subject, "namespaces": [{"name": subject, "uuid": u, "key": k}]}
        # The identities view links each key to the namespace's limits document, and OpenWhisk
        # reads that row's `doc`. CouchDB gives `"doc": null` for a missing one, pouchdb-server no
        # `doc` at all, which OpenWhisk calls a malformed view; an empty document means "the
        # default limits" to both.
        for d in (d, {"_id": f"{subject}/limits"}):
            status, body = http("PUT", f"{base}/{DB_PREFIX}subjects/{doc_path(d['_id'])}", d, auth=auth)
            if status not in (201, 409):
                die(f"store: {d['_id']}: HTTP {status} {body[:200]}")
    log("store: databases, design documents and the guest and whisk.system keys in place")


# ---------------------------------------------------------------------------------- OpenWhisk
# The components' own resources each component has on its classpath, as OpenWhisk's Gradle build
# gives them (core/*/build.gradle): the controller includes the invoker and the scheduler.
DEPENDS_ON = {"controller": {"controller", "invoker", "scheduler"}, "invoker": {"invoker", "scheduler"},
              "scheduler": {"scheduler"}}


def classpath(args, component):
    """The component's classpath: without the resources of components it does not depend on
    (each has its own application.conf, and Typesafe config merges every one it finds)."""
    others = {"controller", "scheduler", "invoker", "standalone"} - DEPENDS_ON[component]
    if args.classpath:
        entries = open(args.classpath).read().strip().split(":")
        keep = [e for e in entries if not any(f"/core/{o}/src/main/resources" in e for o in others)]
        return ":".join(keep)
    lib = glob.glob(os.path.join(args.openwhisk, "core", component, "build", "install", "*", "lib"))
    if not lib:
        die(f"no classes for the {component}: give --classpath, or build the tree with Gradle "
            f"(./gradlew :core:{component}:installDist)")
    return os.path.join(lib[0], "*")


def config_file(work, args, component):
    """-Dconfig.file for the component: its application.conf and, for a build without Kryo
    (io.altoo's pekko-kryo-serialization, to which the scheduler path binds the messages between
    controller and schedulers; a trimmed Maven build may lack it), KryoStandIn.java under the
    serializer name "kryo"."""
    path = work.path("conf", f"{component}.conf")
    lines = ['include classpath("application.conf")']
    if not has_kryo(args, component):
        lines += ['pekko.actor.serializers.kryo = "owcluster.KryoStandIn"']
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return f"-Dconfig.file={path}"


def has_kryo(args, component):
    return "pekko-kryo" in classpath(args, component)


def java_classpath(work, args, component):
    """The component's classpath, with KryoStandIn (and Kryo) on it when pekko-kryo is missing."""
    cp = classpath(args, component)
    if has_kryo(args, component):
        return cp
    tools = work.path("tools", "kryo-stand-in")
    lib = os.path.join(tools, "lib")
    if not glob.glob(os.path.join(lib, "kryo-*.jar")):
        pom = os.path.join(tools, "pom.xml")
        os.makedirs(tools, exist_ok=True)
        with open(pom, "w") as f:
            f.write(f"""<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>local</groupId><artifactId>kryo</artifactId><version>1</version><packaging>pom</packaging>
<dependencies><dependency><groupId>com.esotericsoftware</groupId><artifactId>kryo</artifactId>
<version>{KRYO_VERSION}</version></dependency></dependencies></project>""")
        subprocess.run(["mvn", "-B", "-q", "-f", pom, "dependency:copy-dependencies", f"-DoutputDirectory={lib}"],
                       check=True)
    classes = os.path.join(tools, "classes")
    cp = cp + ":" + os.path.join(lib, "*")
    if not os.path.exists(os.path.join(classes, "owcluster", "KryoStandIn.class")):
        if subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", classes, os.path.join(HERE, "KryoStandIn.java")]).returncode:
            die("compiling KryoStandIn.java failed")
    return cp + ":" + classes


def system_properties(props):
    return [f"-D{k}={v}" for k, v in props.items()]


def runtimes_manifest(args):
    manifest = json.load(open(os.path.join(REPO, "openwhisk-patch", "conf", "standalone-runtimes.json")))
    manifest.pop("description", None)
    return manifest


def common_props(args):
    return {
        "whisk.couchdb.protocol": "http", "whisk.couchdb.host": "127.0.0.1", "whisk.couchdb.port": PORTS["store"],
        "whisk.couchdb.username": DB_USER, "whisk.couchdb.password": DB_PASS, "whisk.couchdb.provider": "CouchDB",
        "whisk.couchdb.databases.WhiskAuth": DB_PREFIX + "subjects",
        "whisk.couchdb.databases.WhiskEntity": DB_PREFIX + "whisks",
        "whisk.couchdb.databases.WhiskActivation": DB_PREFIX + "activations",
        "whisk.etcd.hosts": f"127.0.0.1:{PORTS['etcd']}",
        "whisk.kafka.replication-factor": 1,
        "whisk.spi.DurationCheckerProvider": "org.apache.openwhisk.core.scheduler.queue.NoopDurationCheckerProvider",
        "pekko.remote.artery.canonical.hostname": "127.0.0.1",
        "pekko.remote.artery.bind.hostname": "127.0.0.1",
        "kamon.modules.prometheus-reporter.enabled": "no",
        "whisk.controller.username": "controller.user", "whisk.controller.password": "controller.pass",
        "whisk.invoker.username": "invoker.user", "whisk.invoker.password": "invoker.pass",
        "whisk.scheduler.username": "scheduler.user", "whisk.scheduler.password": "scheduler.pass",
        "whisk.scheduler.grpc.tls": "false",
        "whisk.cluster.name": "whisk",
        "whisk.info.build-no": "cluster.py", "whisk.info.date": "unknown",
        "whisk.etcd.lease.timeout": 10, "whisk.etcd.pool.threads": 10,
        # What ansible's group_vars/all sets for the scheduler path (reference.conf has none).
        "whisk.scheduler.max-peek": 128,
        "whisk.scheduler.data-management-service.retry-interval": "1 second",
        "whisk.scheduler.in-progress-job-retention": "20 seconds",
        "whisk.scheduler.blackbox-multiple": 15,
        "whisk.scheduler.scheduling.stale-threshold": "100 milliseconds",
        "whisk.scheduler.scheduling.check-interval": "100 milliseconds",
        "whisk.scheduler.scheduling.drop-interval": "10 seconds",
        "whisk.scheduler.queue-manager.max-scheduling-time": "20 seconds",
        "whisk.scheduler.queue-manager.max-retries-to-get-queue": 13,
        "whisk.scheduler.queue.idle-grace": "10 minutes",
        "whisk.scheduler.queue.stop-grace": "10 minutes",
        "whisk.scheduler.queue.flush-grace": "60 seconds",
        "whisk.scheduler.queue.graceful-shutdown-timeout": "5 seconds",
        "whisk.scheduler.queue.max-retention-size": 10000,
        "whisk.scheduler.queue.max-retention-ms": 60000,
        "whisk.scheduler.queue.max-blackbox-retention-ms": 300000,
        "whisk.scheduler.queue.throttling-fraction": 0.9,
        "whisk.scheduler.queue.duration-buffer-size": 10,
        "whisk.duration-checker.time-window": "1 d",
        "whisk.invoker.container-creation.max-peek": 500,
        # In step with the executor's own limits (its defaults): see openwhisk-patch/README.md.
        "whisk.memory.max": "2048 m", "whisk.concurrency-limit.max": 64,
    }


def common_env(args):
    return {
        "KAFKA_HOSTS": f"127.0.0.1:{PORTS['kafka']}",
        "RUNTIMES_MANIFEST": json.dumps(runtimes_manifest(args)),
        "LIMITS_ACTIONS_INVOKES_PERMINUTE": "60000", "LIMITS_ACTIONS_INVOKES_CONCURRENT": "1000",
        "LIMITS_TRIGGERS_FIRES_PERMINUTE": "60000", "LIMITS_ACTIONS_SEQUENCE_MAXLENGTH": "50",
        "METRICS_KAMON": "false", "METRICS_LOG": "false",
        "WHISK_API_HOST_PROTO": "http", "WHISK_API_HOST_PORT": str(PORTS["controller"]),
        "WHISK_API_HOST_NAME": "127.0.0.1",
    }


def start_controller(work, args):
    props = {**common_props(args),
             "whisk.spi.LoadBalancerProvider": "org.apache.openwhisk.core.loadBalancer.FPCPoolBalancer",
             "whisk.spi.EntitlementSpiProvider": "org.apache.openwhisk.core.entitlement.FPCEntitlementProvider",
             # The controller reaches the schedulers' queue managers over pekko remoting.
             "pekko.actor.provider": "cluster",
             "pekko.cluster.seed-nodes.0": f"pekko://controller-actor-system@127.0.0.1:{PORTS['controller-pekko']}",
             "pekko.remote.artery.canonical.port": PORTS["controller-pekko"]}
    env = {**common_env(args), "PORT": str(PORTS["controller"])}
    work.start("controller", ["java", "-Xmx768m", "-cp", java_classpath(work, args, "controller"),
                                config_file(work, args, "controller")] + system_properties(props) +
               ["org.apache.openwhisk.core.controller.Controller", "0"], env=env)
    base = f"http://127.0.0.1:{PORTS['controller']}"
    wait_for("controller", lambda: http("GET", base + "/ping")[0] == 200, work=work, name="controller")


def start_scheduler(work, args):
    props = {**common_props(args),
             "pekko.remote.artery.canonical.port": PORTS["scheduler-pekko"],
             "pekko.cluster.seed-nodes.0": f"pekko://scheduler-actor-system@127.0.0.1:{PORTS['scheduler-pekko']}",
             "whisk.scheduler.protocol": "http"}
    env = {**common_env(args), "PORT": str(PORTS["scheduler"]),
           "WHISK_SCHEDULER_ENDPOINTS_HOST": "127.0.0.1",
           "WHISK_SCHEDULER_ENDPOINTS_RPCPORT": str(PORTS["scheduler-rpc"]),
           "WHISK_SCHEDULER_ENDPOINTS_PEKKOPORT": str(PORTS["scheduler-pekko"])}
    work.start("scheduler", ["java", "-Xmx768m", "-cp", java_classpath(work, args, "scheduler"),
                                config_file(work, args, "scheduler")] + system_properties(props) +
               ["org.apache.openwhisk.core.scheduler.Scheduler", "0"], env=env)
    base = f"http://127.0.0.1:{PORTS['scheduler']}"
    wait_for("scheduler", lambda: http("GET", base + "/ping")[0] == 200, work=work, name="scheduler")


def executor_argv(args, index, extra):
    argv = [args.executor, "--listen", f"127.0.0.1:{EXECUTOR_PORT + index}",
            "--state-dir", args_state(args, index), "--dir-quota-mb", "0",
            "--api-host", f"http://127.0.0.1:{PORTS['controller']}"]
    if args.js_engine:
        argv += ["--js-engine", args.js_engine]
    return argv + list(extra)


def args_state(args, index):
    return os.path.join(os.path.abspath(args.work), "state", f"executor{index}")


def start_executor(work, args, index, extra=()):
    work.start(f"executor{index}", executor_argv(args, index, extra))
    url = f"http://127.0.0.1:{EXECUTOR_PORT + index}/health"
    wait_for(f"executor{index}", lambda: http("GET", url)[0] == 200, work=work, name=f"executor{index}")


def start_invoker(work, args, index):
    factory = {"wasm": "org.apache.openwhisk.core.containerpool.wasm.WasmContainerFactoryProvider",
               "mixed": "org.apache.openwhisk.core.containerpool.wasm.MixedContainerFactoryProvider"}[args.factory]
    props = {**common_props(args),
             "whisk.spi.InvokerProvider": "org.apache.openwhisk.core.invoker.FPCInvokerReactive",
             "whisk.spi.InvokerServerProvider": "org.apache.openwhisk.core.invoker.FPCInvokerServer",
             "whisk.spi.ContainerFactoryProvider": factory,
             "whisk.spi.LogStoreProvider":
                 "org.apache.openwhisk.core.containerpool.logging.DockerToActivationLogStoreProvider",
             "whisk.wasm-executor.url": f"http://127.0.0.1:{EXECUTOR_PORT + index}",
             "whisk.container-pool.user-memory": "4096 m",
             "pekko.remote.artery.canonical.port": 0}
    if args.factory == "mixed":
        props.update({"whisk.mixed-container-factory.executor-kinds.0": "wasm:0.1",
                      "whisk.mixed-container-factory.executor-kinds.1": "nodejs:20"})
    env = {**common_env(args), "PORT": str(INVOKER_PORT + index)}
    if args.docker_host:
        env["DOCKER_HOST"] = args.docker_host
    work.start(f"invoker{index}", ["java", "-Xmx768m", "-cp", java_classpath(work, args, "invoker"),
                                   config_file(work, args, "invoker")] + system_properties(props) +
               ["org.apache.openwhisk.core.invoker.Invoker", "--id", str(index)], env=env)
    base = f"http://127.0.0.1:{INVOKER_PORT + index}"
    wait_for(f"invoker{index}", lambda: http("GET", base + "/ping")[0] == 200, work=work, name=f"invoker{index}")


def invokers_healthy(n):
    status, body = http("GET", f"http://127.0.0.1:{PORTS['controller']}/invokers")
    states = json.loads(body) if status == 200 else {}
    return sum(1 for s in states.values() if s == "up") >= n


# ----------------------------------------------------------------------------------- commands
def up(args):
    work = Work(args.work)
    if not os.path.isdir(os.path.join(args.openwhisk, "ansible", "files")):
        die(f"{args.openwhisk} is not an OpenWhisk source tree (no ansible/files)")
    if not os.path.exists(args.executor):
        die(f"no executor binary at {args.executor}")
    ports = list(PORTS.values()) + [p + i for p in (INVOKER_PORT, EXECUTOR_PORT) for i in range(args.invokers)]
    busy = sorted(p for p in ports if port_open(p))
    if busy:
        die(f"ports {busy} on 127.0.0.1 are in use (an earlier layout? `cluster.py down`), so a service "
            "could not tell its own from the stranger's")
    start_kafka(work)
    start_etcd(work)
    start_store(work, args.openwhisk)
    start_scheduler(work, args)
    start_controller(work, args)
    for i in range(args.invokers):
        start_executor(work, args, i)
        start_invoker(work, args, i)
    wait_for(f"{args.invokers} healthy invokers", lambda: invokers_healthy(args.invokers), seconds=300)
    with open(work.path("conf", "up.json"), "w") as f:
        json.dump(vars(args), f)
    log(f"API http://127.0.0.1:{PORTS['controller']} (guest key: {args.openwhisk}/ansible/files/auth.guest)")


def down(args):
    work = Work(args.work)
    order = [n for n in work.names() if n.startswith("invoker")] + ["controller", "scheduler"] + \
        [n for n in work.names() if n.startswith("executor")] + ["store", "etcd", "kafka"]
    for name in order:
        work.stop(name)


def status(args):
    work = Work(args.work)
    for name in work.names():
        print(f"{name:12} {'running' if work.alive(name) else 'stopped'} (pid {work.pid(name)})")
    code, body = http("GET", f"http://127.0.0.1:{PORTS['controller']}/invokers")
    print(f"invokers     {body.decode() if code == 200 else 'controller not answering'}")


def executor(args):
    work = Work(args.work)
    saved = argparse.Namespace(**json.load(open(work.path("conf", "up.json"))))
    indexes = range(saved.invokers) if args.command == "executors" else [args.index]
    for index in indexes:
        if args.action == "stop":
            work.stop(f"executor{index}", grace=5)
        else:
            start_executor(work, saved, index, args.extra)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--work", default=os.path.join(REPO, "target", "cluster"))
    sub = p.add_subparsers(dest="command", required=True)
    u = sub.add_parser("up")
    u.add_argument("--openwhisk", required=True)
    u.add_argument("--classpath")
    u.add_argument("--executor", required=True)
    u.add_argument("--js-engine")
    u.add_argument("--factory", choices=["wasm", "mixed"], default="wasm")
    u.add_argument("--invokers", type=int, default=2)
    u.add_argument("--docker-host")
    sub.add_parser("down")
    sub.add_parser("status")
    e = sub.add_parser("executor")
    e.add_argument("action", choices=["stop", "start"])
    e.add_argument("index", type=int)
    e.add_argument("extra", nargs=argparse.REMAINDER)
    every = sub.add_parser("executors")
    every.add_argument("action", choices=["stop", "start"])
    every.add_argument("extra", nargs=argparse.REMAINDER)
    args = p.parse_args(argv)
    if args.command == "up":
        args.openwhisk = os.path.abspath(args.openwhisk)
        args.executor = os.path.abspath(args.executor)
        args.js_engine = args.js_engine and os.path.abspath(args.js_engine)
        args.classpath = args.classpath and os.path.abspath(args.classpath)
        args.work = os.path.abspath(args.work)
    {"up": up, "down": down, "status": status, "executor": executor, "executors": executor}[args.command](args)


if __name__ == "__main__":
    main(sys.argv[1:])
