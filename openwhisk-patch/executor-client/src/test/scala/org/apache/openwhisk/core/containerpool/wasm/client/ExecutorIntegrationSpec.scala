/*
 * Licensed to the Apache Software Foundation (ASF) under one or more
 * contributor license agreements.  See the NOTICE file distributed with
 * this work for additional information regarding copyright ownership.
 * The ASF licenses this file to You under the Apache License, Version 2.0
 * (the "License"); you may not use this file except in compliance with
 * the License.  You may obtain a copy of the License at
 *
 *     http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS,
 * WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
 * See the License for the specific language governing permissions and
 * limitations under the License.
 */

// What this file is for: the client against the real wasm-executor binary and real Wasm
// actions — the container lifecycle the invoker drives (init with annotations and limits, run,
// error kinds, time limits, concurrency, logs with sentinels and truncation, destroy), `dir`
// grants kept apart by namespace, and the cleanup of an invoker's leftover containers.

package org.apache.openwhisk.core.containerpool.wasm.client

import java.nio.file.Files
import java.util.concurrent.atomic.AtomicInteger

import org.apache.pekko.actor.ActorSystem
import org.apache.pekko.http.scaladsl.Http
import org.scalatest.BeforeAndAfterAll
import org.scalatest.flatspec.AnyFlatSpec
import org.scalatest.matchers.should.Matchers
import spray.json._

import scala.concurrent.duration._
import scala.concurrent.{Await, Future}

class ExecutorIntegrationSpec extends AnyFlatSpec with Matchers with BeforeAndAfterAll {
  import ExecutorOutcome._
  import TestExecutor.{base64, module, zip}

  implicit private val system: ActorSystem = ActorSystem("executor-integration-spec")
  import system.dispatcher

  private lazy val executor = TestExecutor.shared
  private lazy val config = WasmExecutorConfig(url = executor.url, requestSlack = 5.seconds, logWait = 2.seconds)
  private lazy val client = new ExecutorClient(config)
  private lazy val admin = new ExecutorAdmin(config)

  private val nonce = "t" + java.lang.Long.toString(System.nanoTime() % 1000000000L, 36)
  private val counter = new AtomicInteger(0)
  private val MB = 1L << 20

  /** A fresh id as the factory would make it for invoker `wsk0`. */
  private def newId(action: String): String = ContainerIds.forName(s"wsk0_${counter.incrementAndGet()}_guest_$action", nonce)

  private def await[T](f: Future[T]): T = Await.result(f, 60.seconds)

  private def initValue(code: Array[Byte],
                        name: String,
                        main: String = "main",
                        annotations: Option[JsObject] = None,
                        limits: InitLimits = InitLimits(256, 60.seconds, 1, Some(10L)),
                        namespace: Option[String] = None): JsObject = {
    val initializer = JsObject(
      "name" -> JsString(name),
      "main" -> JsString(main),
      "binary" -> JsTrue,
      "code" -> JsString(base64(code)),
      "env" -> JsObject("__OW_NAMESPACE" -> JsString("guest"), "__OW_ACTION_NAME" -> JsString(s"/guest/$name")))
    InitBody.enrich(initializer, namespace, annotations, limits, Map("__OW_API_HOST" -> "http://127.0.0.1:3233"))
  }

  private def runBody(params: JsValue): JsObject =
    JsObject(
      "value" -> params,
      "namespace" -> JsString("guest"),
      "action_name" -> JsString("/guest/test"),
      "action_version" -> JsString("0.0.1"),
      "activation_id" -> JsString("0123456789abcdef0123456789abcdef"),
      "transaction_id" -> JsString("tid"),
      "deadline" -> JsString((System.currentTimeMillis() + 60000).toString))

  private def init(id: String, value: JsObject): ExecutorOutcome = await(client.init(id, value, 60.seconds))
  private def run(id: String, params: JsValue, timeout: FiniteDuration = 60.seconds): ExecutorOutcome =
    await(client.run(id, runBody(params), timeout, MB, MB / 2))

  /** A container initialised with `action`, ready to run. */
  private def deployed(action: String, main: String = "main", limits: InitLimits = InitLimits(256, 60.seconds, 1, Some(10L))): String = {
    val id = newId(action)
    init(id, initValue(module(action), action, main, limits = limits)) shouldBe Answered(200, """{"ok":true}""")
    id
  }

  private def answered(o: ExecutorOutcome): Answered = o match {
    case a: Answered => a
    case other       => fail(s"expected an answer, got $other")
  }

  override def afterAll(): Unit = {
    Await.ready(Http().shutdownAllConnectionPools(), 10.seconds)
    Await.ready(system.terminate(), 10.seconds)
  }

  behavior of "the executor, driven by the client"

  it should "answer /health" in {
    val health = await(client.health())
    health.fields.get("status") shouldBe Some(JsString("ok"))
  }

  it should "initialise a bare module and run it many times" in {
    val id = deployed("echo")
    for (i <- 1 to 3) {
      val params = JsObject("i" -> JsNumber(i), "text" -> JsString("héllo"))
      val a = answered(run(id, params))
      a.status shouldBe 200
      a.body.parseJson shouldBe params
    }
    await(client.destroy(id))
  }

  it should "initialise from a zip, as wsk uploads it, and accept annotations and limits" in {
    val id = newId("add")
    val value = initValue(
      zip("add.wasm", module("add")),
      "add",
      // only net_access reaches the executor; the others stay in the invoker
      annotations = Some(JsObject("exec" -> JsString("wasm:0.1"), "provide-api-key" -> JsFalse, "net_access" -> JsFalse)),
      limits = InitLimits(128, 10.seconds, 2, Some(1L)))
    init(id, value) shouldBe Answered(200, """{"ok":true}""")
    answered(run(id, JsObject("param1" -> JsNumber(2), "param2" -> JsNumber(2)))).body.parseJson shouldBe
      JsObject("result" -> JsNumber(4))
    await(client.destroy(id))
  }

  it should "call the export named by main" in {
    val id = deployed("add", main = "multiply")
    answered(run(id, JsObject("param1" -> JsNumber(3), "param2" -> JsNumber(4)))).body.parseJson shouldBe
      JsObject("result" -> JsNumber(12))
    await(client.destroy(id))
  }

  it should "refuse a second /init and an /init without code, with OpenWhisk's texts" in {
    val id = deployed("echo")
    val again = answered(init(id, initValue(module("echo"), "echo")))
    again.status shouldBe 403
    again.errorMessage shouldBe Some("Cannot initialize the action more than once.")
    await(client.destroy(id))

    val empty = answered(init(newId("empty"), JsObject("name" -> JsString("empty"), "main" -> JsString("main"))))
    empty.status shouldBe 403
    empty.errorMessage shouldBe Some("Missing main/no code to execute.")
  }

  it should "answer bad code with an error the user can read" in {
    val bad = answered(init(newId("bad"), initValue("this is not wasm".getBytes("UTF-8"), "bad")))
    bad.status should not be 200
    bad.errorMessage shouldBe defined
  }

  it should "refuse a dir annotation without the action's namespace, or one that climbs out" in {
    val refused = answered(
      init(newId("dir"), initValue(module("echo"), "echo", annotations = Some(JsObject("dir" -> JsString("/etc"))))))
    refused.status shouldBe 502
    refused.errorMessage.getOrElse("") should (include("dir") and include("namespace"))

    val climbing = answered(
      init(
        newId("dir"),
        initValue(
          module("echo"),
          "echo",
          annotations = Some(JsObject("dir" -> JsString("/data/../../etc"))),
          namespace = Some("guest"))))
    climbing.status shouldBe 502
    climbing.errorMessage.getOrElse("") should include("dir")
  }

  it should "report a trap as a failed activation and keep serving the container" in {
    val id = deployed("panic")
    val trapped = answered(run(id, JsObject("message" -> JsString("boom"))))
    trapped.status shouldBe 502
    trapped.errorMessage shouldBe defined
    answered(run(id, JsObject("ok" -> JsTrue))).body.parseJson shouldBe JsObject("ok" -> JsTrue)
    await(client.destroy(id))
  }

  it should "pass an application error through as a 200 answer with an error field" in {
    val id = deployed("echo")
    val a = answered(run(id, JsObject("error" -> JsString("user said so"))))
    a.status shouldBe 200
    a.errorMessage shouldBe Some("user said so")
    await(client.destroy(id))
  }

  it should "report /run of an unknown container as a lost container, not as the action's answer" in {
    val id = newId("nobody")
    run(id, JsObject()) match {
      case ContainerLost(reason) => reason should (include(id) and include("not initialized"))
      case other                 => fail(s"expected ContainerLost, got $other")
    }
  }

  it should "tell a bare module uploaded as text (what wsk does with a .wasm) to be zipped" in {
    val mangled = new String(module("add"), "UTF-8") // its bytes that are not UTF-8 become U+FFFD
    val value = JsObject(initValue(module("add"), "add").fields ++ Map("binary" -> JsFalse, "code" -> JsString(mangled)))
    val refused = answered(init(newId("text"), value))
    refused.status shouldBe 502
    refused.errorMessage.get should include("zip NAME.zip NAME.wasm")
  }

  it should "stop an action at its time limit" in {
    val id = deployed("loop", limits = InitLimits(256, 500.millis, 1, None))
    val body = runBody(JsObject("forever" -> JsTrue)).fields + ("deadline" -> JsString((System.currentTimeMillis() + 500).toString))
    val start = System.nanoTime()
    val a = answered(await(client.run(id, JsObject(body), 500.millis, MB, MB / 2)))
    (System.nanoTime() - start).nanos should be < 10.seconds
    a.status shouldBe 502
    a.errorMessage shouldBe defined
    await(client.destroy(id))
  }

  it should "time out on the client side when the executor is slower than the request limit" in {
    val id = deployed("loop")
    val slow = client.run(id, runBody(JsObject("ms" -> JsNumber(3000))), 200.millis, MB, MB / 2)
    // requestSlack is 5 s in this suite, so use a client without slack
    val strict = new ExecutorClient(config.copy(requestSlack = Duration.Zero))
    await(strict.run(id, runBody(JsObject("ms" -> JsNumber(2000))), 300.millis, MB, MB / 2)) shouldBe TimedOut(300.millis)
    answered(await(slow)).status shouldBe 200
    await(client.destroy(id))
  }

  it should "run activations of one container concurrently up to its concurrency limit" in {
    val id = deployed("loop", limits = InitLimits(256, 60.seconds, 8, None))
    val start = System.nanoTime()
    val all = await(Future.sequence((1 to 8).map(_ => client.run(id, runBody(JsObject("ms" -> JsNumber(500))), 60.seconds, MB, MB / 2))))
    all.foreach(o => answered(o).status shouldBe 200)
    // eight 500 ms activations one after another would take 4 s
    (System.nanoTime() - start).nanos should be < 3.seconds
    await(client.destroy(id))
  }

  it should "answer 503 at capacity, which passes for activations and lasts for containers" in {
    // A second executor that runs one activation at a time, queues none and holds one container.
    val small = TestExecutor.start(Seq("--max-concurrent", "1", "--queue-depth", "0", "--max-containers", "1"))
    try {
      val c = new ExecutorClient(WasmExecutorConfig(url = small.url))
      val id = newId("loop")
      await(c.init(id, initValue(module("loop"), "loop", limits = InitLimits(256, 60.seconds, 4, None)), 60.seconds)) shouldBe
        Answered(200, """{"ok":true}""")
      val busy = c.run(id, runBody(JsObject("ms" -> JsNumber(1500))), 60.seconds, MB, MB / 2)
      Thread.sleep(300) // let the first activation take the only slot
      await(c.run(id, runBody(JsObject()), 60.seconds, MB, MB / 2)) match {
        case AtCapacity(body, passes) =>
          body should include("capacity")
          passes shouldBe true
        case other => fail(s"expected a 503, got $other")
      }
      await(c.init(newId("echo"), initValue(module("echo"), "echo"), 60.seconds)) match {
        case AtCapacity(body, passes) =>
          body should include("maximum of 1 containers")
          passes shouldBe false
        case other => fail(s"expected a 503, got $other")
      }
      answered(await(busy)).status shouldBe 200
      answered(await(c.run(id, runBody(JsObject()), 60.seconds, MB, MB / 2))).status shouldBe 200

      // allowed to retry, the second activation waits for the slot instead
      val first = c.run(id, runBody(JsObject("ms" -> JsNumber(1000))), 60.seconds, MB, MB / 2)
      Thread.sleep(300)
      val start = System.nanoTime()
      val second = await(c.run(id, runBody(JsObject()), 60.seconds, MB, MB / 2, capacityRetryFor = 10.seconds))
      answered(second).status shouldBe 200
      (System.nanoTime() - start).nanos should be > 400.millis
      answered(await(first)).status shouldBe 200
    } finally small.stop()
  }

  behavior of "dir grants"

  it should "keep one namespace's directory out of another namespace's reach" in {
    val root = Files.createTempDirectory("wasm-grants") // mode 0700, as the executor requires
    val isolated = TestExecutor.start(Seq("--dir-root", root.toString))
    try {
      val c = new ExecutorClient(WasmExecutorConfig(url = isolated.url, requestSlack = 5.seconds))
      // The same action with the same annotation, deployed by two tenants.
      def deployIn(namespace: String): String = {
        val id = newId(s"filesys_$namespace")
        val value = initValue(
          module("filesys"),
          "filesys",
          annotations = Some(JsObject("dir" -> JsString("/data"))),
          namespace = Some(namespace))
        await(c.init(id, value, 60.seconds)) shouldBe Answered(200, """{"ok":true}""")
        id
      }
      def runOn(id: String, params: JsObject): JsObject = {
        val a = answered(await(c.run(id, runBody(params), 60.seconds, MB, MB / 2)))
        withClue(a.body) { a.status shouldBe 200 }
        a.body.parseJson.asJsObject
      }
      val alice = deployIn("alice")
      val bob = deployIn("bob")

      val written =
        runOn(alice, JsObject("dir" -> JsString("/data"), "file" -> JsString("secret.txt"), "content" -> JsString("alice's")))
      written.fields.get("read") shouldBe Some(JsString("alice's"))

      val probed = runOn(bob, JsObject("read_path" -> JsString("/data/secret.txt")))
      withClue(probed.compactPrint) {
        probed.fields.get("read") should not be Some(JsString("alice's"))
        probed.fields should contain key "read_error" // bob's /data is his own, and empty
      }

      // bob's file of the same name leaves alice's alone
      runOn(bob, JsObject("dir" -> JsString("/data"), "file" -> JsString("secret.txt"), "content" -> JsString("bob's")))
        .fields.get("read") shouldBe Some(JsString("bob's"))
      runOn(alice, JsObject("read_path" -> JsString("/data/secret.txt"))).fields.get("read") shouldBe Some(JsString("alice's"))

      // on the host, each lies beneath its namespace's directory of the root
      new String(Files.readAllBytes(isolated.seen(root.resolve("alice/data/secret.txt"))), "UTF-8") shouldBe "alice's"
      new String(Files.readAllBytes(isolated.seen(root.resolve("bob/data/secret.txt"))), "UTF-8") shouldBe "bob's"
      Seq(alice, bob).foreach(id => await(c.destroy(id)))
    } finally {
      isolated.stop()
      TestExecutor.deleteTree(root)
    }
  }

  behavior of "logs through the executor"

  private def echoLogs(out: Seq[String], err: Seq[String]): JsObject =
    JsObject("__log" -> JsArray(out.map(JsString(_)).toVector), "__err" -> JsArray(err.map(JsString(_)).toVector))

  it should "deliver an activation's stdout and stderr without sentinels or the result line" in {
    val id = deployed("echo")
    answered(run(id, echoLogs(Seq("a", "b"), Seq("c")))).status shouldBe 200
    val logs = await(client.logReader(id).collect(10 * MB, waitForSentinel = true))
    logs.complete shouldBe true
    logs.truncated shouldBe false
    logs.lines.map(l => l.stream -> l.log.stripLineEnd).sortBy(_._1) shouldBe
      Seq("stderr" -> "c", "stdout" -> "a", "stdout" -> "b")
    logs.lines.foreach(_.time should not be empty)
    await(client.destroy(id))
  }

  it should "hand out two activations' logs one at a time" in {
    val id = deployed("echo")
    val reader = client.logReader(id)
    answered(run(id, echoLogs(Seq("first"), Nil))).status shouldBe 200
    answered(run(id, echoLogs(Seq("second"), Nil))).status shouldBe 200
    await(reader.collect(10 * MB, waitForSentinel = true)).lines.map(_.log.stripLineEnd) shouldBe Seq("first")
    await(reader.collect(10 * MB, waitForSentinel = true)).lines.map(_.log.stripLineEnd) shouldBe Seq("second")
    await(client.destroy(id))
  }

  it should "truncate at the byte limit with OpenWhisk's notice, without touching the next activation" in {
    val id = deployed("echo")
    val reader = client.logReader(id)
    val many = (1 to 50).map(i => f"line $i%03d " + "x" * 90)
    answered(run(id, echoLogs(many, Nil))).status shouldBe 200
    answered(run(id, echoLogs(Seq("after"), Nil))).status shouldBe 200
    val limit = 1000L
    val first = await(reader.collect(limit, waitForSentinel = true))
    first.truncated shouldBe true
    first.lines.map(l => l.toJson.compactPrint.getBytes("UTF-8").length + 1).sum should be <= limit.toInt
    first.lines.head.log should startWith("line 001")
    val shown = first.withNotices(limit)
    shown.last.stream shouldBe "stderr"
    shown.last.log shouldBe "Logs were truncated because the total bytes size exceeds the limit of 1000 bytes."
    await(reader.collect(limit, waitForSentinel = true)).lines.map(_.log.stripLineEnd) shouldBe Seq("after")
    await(client.destroy(id))
  }

  it should "deliver the logs of a failed activation" in {
    val id = deployed("panic")
    answered(run(id, JsObject("message" -> JsString("went wrong")))).status shouldBe 502
    val logs = await(client.logReader(id).collect(10 * MB, waitForSentinel = false))
    logs.complete shouldBe true
    logs.lines.map(_.log).mkString should include("went wrong")
    await(client.destroy(id))
  }

  behavior of "an executor with a bearer token"

  it should "serve the client that holds the token, and only it" in {
    val dir = java.nio.file.Files.createTempDirectory("wasm-token")
    val tokenFile = dir.resolve("token")
    java.nio.file.Files.write(tokenFile, "invoker-token-0123456789abcdef\n".getBytes("UTF-8"))
    java.nio.file.Files.setPosixFilePermissions(
      tokenFile,
      java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"))
    val guarded = TestExecutor.start(Seq("--auth-token-file", tokenFile.toString))
    try {
      val withToken = WasmExecutorConfig(url = guarded.url, authTokenFile = Some(tokenFile.toString))
      val trusted = new ExecutorClient(withToken)
      val id = newId("echo")
      await(trusted.init(id, initValue(module("echo"), "echo"), 60.seconds)) shouldBe Answered(200, """{"ok":true}""")
      answered(await(trusted.run(id, runBody(JsObject("k" -> JsNumber(1))), 60.seconds, MB, MB))).body.parseJson shouldBe
        JsObject("k" -> JsNumber(1))
      new ExecutorAdmin(withToken).containers() should contain(id)

      val stranger = new ExecutorClient(WasmExecutorConfig(url = guarded.url))
      val refused = answered(await(stranger.run(id, runBody(JsObject()), 60.seconds, MB, MB)))
      refused.status shouldBe 401
      refused.body should include("bearer token")
      // Refused before its body is read, a large /init still gets its answer (not a broken
      // connection), so the invoker's log says what is wrong.
      val large = JsObject(initValue(module("echo"), "echo").fields + ("padding" -> JsString("p" * (8 << 20))))
      val bigRefused = answered(await(stranger.init(newId("echo"), large, 60.seconds)))
      bigRefused.status shouldBe 401
      await(trusted.destroy(id))
    } finally guarded.stop()
  }

  behavior of "destroy and cleanup"

  it should "forget a destroyed container" in {
    val id = deployed("echo")
    await(client.destroy(id))
    run(id, JsObject()) shouldBe a[ContainerLost]
    await(client.logReader(id).collect(MB, waitForSentinel = true)) shouldBe ActivationLogs(Vector.empty, false, true)
    await(client.destroy(id)) // already gone: still fine
    admin.containers() should not contain id
  }

  it should "remove exactly the containers of one invoker" in {
    val mine = Seq(deployed("echo"), deployed("add"))
    val other = ContainerIds.forName("wsk01_1_guest_echo", nonce)
    val stranger = ContainerIds.forName("someone_else", nonce)
    Seq(other, stranger).foreach(id => init(id, initValue(module("echo"), "echo")) shouldBe Answered(200, """{"ok":true}"""))

    admin.containers() should contain allElementsOf (mine ++ Seq(other, stranger))
    val report = admin.removeOwned("wsk0")
    report.failed shouldBe empty
    report.removed should contain allElementsOf mine
    report.removed should not contain other
    val left = admin.containers()
    left should contain noElementsOf mine
    left should contain allElementsOf Seq(other, stranger)

    admin.removeOwned("wsk01").removed shouldBe Seq(other)
    admin.destroy(stranger) shouldBe true
    admin.containers() should not contain stranger
  }

  behavior of "a restarted executor"

  it should "report its former containers as lost, and know it without asking once it has seen the new instance" in {
    val port = TestExecutor.freePort()
    val first = TestExecutor.start(port = port)
    val restarted = new ExecutorClient(WasmExecutorConfig(url = first.url, requestSlack = 5.seconds))
    def runOn(id: String, initializedBy: Option[String]) =
      await(restarted.run(id, runBody(JsObject("k" -> JsNumber(1))), 60.seconds, MB, MB, initializedBy = initializedBy))
    val (lost, reused) = (newId("echo"), newId("echo"))
    try {
      Seq(lost, reused).foreach(id => await(restarted.init(id, initValue(module("echo"), "echo"), 60.seconds)) shouldBe a[Answered])
      val before = restarted.instance
      before shouldBe defined
      answered(runOn(lost, before)).status shouldBe 200
      first.stop()
      val second = TestExecutor.start(port = port)
      try {
        // The first answer of the new process names it: the 404 is explained as the restart.
        runOn(lost, before) match {
          case ContainerLost(reason) => reason should (include("restarted") and include(before.get))
          case other                 => fail(s"expected ContainerLost, got $other")
        }
        restarted.instance should not be before
        await(restarted.health()).fields.get("instance") shouldBe restarted.instance.map(JsString(_))
        // The new process holds a container of the same id: had the client asked, it would have run.
        await(restarted.init(reused, initValue(module("echo"), "echo"), 60.seconds)) shouldBe a[Answered]
        runOn(reused, before) shouldBe a[ContainerLost]
        answered(runOn(reused, restarted.instance)).status shouldBe 200
      } finally second.stop()
    } finally first.stop()
  }
}
