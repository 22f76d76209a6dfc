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

// What this file is for: the client's mapping of HTTP-level events onto ExecutorOutcome for the
// cases a healthy executor does not produce on demand (503, an answer without Content-Length,
// a connection dropped mid-request, a refused port, a stall), using a scripted raw-socket
// server; and log polling while the sentinels are late or never come.

package org.apache.openwhisk.core.containerpool.wasm.client

import java.io.{BufferedInputStream, InputStream, OutputStream}
import java.net.{ServerSocket, Socket}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.concurrent.atomic.AtomicInteger

import org.apache.pekko.actor.ActorSystem
import org.apache.pekko.http.scaladsl.Http
import org.scalatest.BeforeAndAfterAll
import org.scalatest.flatspec.AnyFlatSpec
import org.scalatest.matchers.should.Matchers
import spray.json._

import scala.concurrent.Await
import scala.concurrent.duration._
import scala.util.Try

/** A tiny HTTP/1.1 server that answers each request as `script(method, path, body)` says. */
final class ScriptedServer(script: (String, String, String, OutputStream, Socket) => Unit, fixedPort: Int = 0) {
  private val server = new ServerSocket(fixedPort)
  val port: Int = server.getLocalPort
  val url = s"http://127.0.0.1:$port"

  private val acceptor = new Thread(() => {
    while (!server.isClosed) {
      Try(server.accept()).foreach { socket =>
        val t = new Thread(() => handle(socket))
        t.setDaemon(true)
        t.start()
      }
    }
  })
  acceptor.setDaemon(true)
  acceptor.start()

  private def readLine(in: InputStream): String = {
    val sb = new StringBuilder
    var c = in.read()
    while (c != -1 && c != '\n') {
      if (c != '\r') sb.append(c.toChar)
      c = in.read()
    }
    sb.toString
  }

  private def handle(socket: Socket): Unit = {
    Try {
      val in = new BufferedInputStream(socket.getInputStream)
      val requestLine = readLine(in)
      val headers = Iterator.continually(readLine(in)).takeWhile(_.nonEmpty).toList
      val length = headers.collectFirst {
        case h if h.toLowerCase.startsWith("content-length:") => h.split(":", 2)(1).trim.toInt
      }.getOrElse(0)
      val body = new String(in.readNBytes(length), UTF_8)
      val Array(method, path, _) = requestLine.split(" ", 3)
      script(method, path, body, socket.getOutputStream, socket)
    }.failed.foreach(_ => ())
    Try(socket.close())
  }

  def close(): Unit = server.close()
}

object ScriptedServer {
  def respond(out: OutputStream, status: Int, body: String, contentLength: Boolean = true, extra: String = ""): Unit = {
    val bytes = body.getBytes(UTF_8)
    val head =
      if (contentLength) s"HTTP/1.1 $status X\r\nContent-Type: application/json\r\nContent-Length: ${bytes.length}\r\n${extra}Connection: close\r\n\r\n"
      else s"HTTP/1.1 $status X\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n${extra}Connection: close\r\n\r\n"
    out.write(head.getBytes(UTF_8))
    if (contentLength) out.write(bytes)
    else {
      out.write(s"${Integer.toHexString(bytes.length)}\r\n".getBytes(UTF_8))
      out.write(bytes)
      out.write("\r\n0\r\n\r\n".getBytes(UTF_8))
    }
    out.flush()
  }
}

class ClientMappingSpec extends AnyFlatSpec with Matchers with BeforeAndAfterAll {
  import ExecutorOutcome._
  import ScriptedServer.respond

  implicit private val system: ActorSystem = ActorSystem("client-mapping-spec")

  private val logCalls = new AtomicInteger(0)
  private val busyCalls = new AtomicInteger(0)
  private val fullCalls = new AtomicInteger(0)
  private val deadlines = new java.util.concurrent.ConcurrentLinkedQueue[Long]()
  private def busy(out: OutputStream) = respond(out, 503, """{"error":"at capacity"}""", extra = "Retry-After: 1\r\n")
  private def logLine(stream: String, text: String) = LogLine("t", stream, text).toJson.compactPrint
  private val sentinelLines = Seq("stdout", "stderr").map(logLine(_, ExecutorLogs.Sentinel + "\n"))

  private val server = new ScriptedServer((method, path, body, out, socket) =>
    path match {
      case "/c1/run" if body.contains("\"mode\":\"ok\"") => respond(out, 200, """{"ok":true}""")
      case "/c1/run" if body.contains("\"mode\":\"busy\"") => busy(out)
      case "/c1/run" if body.contains("\"mode\":\"full\"") =>
        fullCalls.incrementAndGet()
        respond(out, 503, """{"error":"the executor holds its maximum of 3 containers; retry elsewhere"}""")
      case "/c1/run" if body.contains("\"mode\":\"busy-twice\"") =>
        deadlines.add(body.parseJson.asJsObject.fields("deadline") match { case JsString(d) => d.toLong; case other => sys.error(s"deadline $other") })
        if (busyCalls.incrementAndGet() <= 2) busy(out) else respond(out, 200, """{"ok":true}""")
      case "/c1/run" if body.contains("\"mode\":\"trap\"") => respond(out, 502, """{"error":"wasm trap: unreachable"}""")
      case "/c1/run" if body.contains("\"mode\":\"chunked\"") => respond(out, 200, """{"ok":true}""", contentLength = false)
      case "/c1/run" if body.contains("\"mode\":\"big\"") => respond(out, 200, s"""{"data":"${"x" * 5000}"}""")
      case "/c1/run" if body.contains("\"mode\":\"drop\"") => socket.close()
      case "/c1/run" if body.contains("\"mode\":\"slow\"") => Thread.sleep(3000); respond(out, 200, "{}")
      case "/late/logs" =>
        // first ask: the activation's output but not yet its end; second: the end and the next activation
        logCalls.incrementAndGet() match {
          case 1 => respond(out, 200, Seq(logLine("stdout", "one\n")).mkString("", "\n", "\n"))
          case 2 => respond(out, 200, (Seq(logLine("stderr", "two\n")) ++ sentinelLines :+ logLine("stdout", "three\n")).mkString("", "\n", "\n"))
          case _ => respond(out, 200, sentinelLines.mkString("", "\n", "\n"))
        }
      case "/never/logs" => respond(out, 200, logLine("stdout", "partial\n") + "\n")
      case "/gone/logs"  => respond(out, 404, """{"error":"unknown container"}""")
      case _             => respond(out, 404, """{"error":"no route"}""")
  })

  private val config = WasmExecutorConfig(
    url = server.url,
    requestSlack = Duration.Zero,
    logWait = 500.millis,
    logPollInterval = 20.millis)
  private val client = new ExecutorClient(config)

  override def afterAll(): Unit = {
    server.close()
    Await.ready(Http().shutdownAllConnectionPools(), 10.seconds)
    Await.ready(system.terminate(), 10.seconds)
  }

  private def run(mode: String, timeout: FiniteDuration = 5.seconds, max: Long = 1 << 20, trunc: Long = 1 << 19) =
    Await.result(client.run("c1", JsObject("value" -> JsObject("mode" -> JsString(mode))), timeout, max, trunc), 10.seconds)

  behavior of "ExecutorClient outcomes"

  it should "pass an answer through with its status and body" in {
    run("ok") shouldBe Answered(200, """{"ok":true}""", None)
    val trap = run("trap")
    trap shouldBe an[Answered]
    trap.asInstanceOf[Answered].status shouldBe 502
    trap.asInstanceOf[Answered].errorMessage shouldBe Some("wasm trap: unreachable")
  }

  it should "turn 503 into an at-capacity outcome that says whether it passes" in {
    run("busy") shouldBe AtCapacity("""{"error":"at capacity"}""", passes = true)
    run("full") shouldBe a[AtCapacity]
    run("full").asInstanceOf[AtCapacity].passes shouldBe false
  }

  it should "send a passing 503 again within the allowed time, and no longer" in {
    val before = System.currentTimeMillis()
    val deadline = before + 5000
    def post(mode: String, retryFor: FiniteDuration) =
      client.exchange("c1", "run", JsObject("value" -> JsObject("mode" -> JsString(mode)), "deadline" -> JsString(deadline.toString)), 5.seconds, 1000, 1000, retryFor)
    val ok = Await.result(post("busy-twice", 5.seconds), 10.seconds)
    ok.outcome shouldBe Answered(200, """{"ok":true}""", None)
    busyCalls.get shouldBe 3
    // The deadline moves by the time waited, and the interval OpenWhisk charges starts at the
    // attempt the executor took.
    val sent = deadlines.toArray.map(_.asInstanceOf[Long]).toSeq
    sent.size shouldBe 3
    sent.head shouldBe deadline
    sent.zip(sent.tail).foreach { case (a, b) => b should be > a }
    (sent.last - deadline) shouldBe (ok.sent.toEpochMilli - before) +- 50L
    val start = System.nanoTime()
    Await.result(post("busy", 300.millis), 10.seconds).outcome shouldBe a[AtCapacity]
    (System.nanoTime() - start).nanos should (be >= 200.millis and be < 2.seconds)
  }

  it should "not send a 503 again that waiting does not change" in {
    val calls = fullCalls.get
    val outcome = Await.result(client.post("c1", "run", JsObject("value" -> JsObject("mode" -> JsString("full"))), 5.seconds, 1000, 1000, 5.seconds), 10.seconds)
    outcome shouldBe a[AtCapacity]
    fullCalls.get shouldBe calls + 1
  }

  it should "treat an answer without Content-Length as no answer, as OpenWhisk does" in {
    run("chunked") shouldBe a[NoResponse]
  }

  it should "cut an answer beyond the response limit" in {
    val big = run("big", max = 1000, trunc = 100)
    big shouldBe an[Answered]
    val a = big.asInstanceOf[Answered]
    a.body.length shouldBe 100
    a.truncated shouldBe Some(Truncation(5000 + """{"data":""}""".length, 1000))
    a.ok shouldBe false
  }

  it should "report a dropped connection and a refused port as unreachable" in {
    run("drop") shouldBe an[Unreachable]
    val closedPort = TestExecutor.freePort()
    val nobody = new ExecutorClient(WasmExecutorConfig(url = s"http://127.0.0.1:$closedPort"))
    val outcome = Await.result(nobody.run("c1", JsObject(), 2.seconds, 1000, 1000), 10.seconds)
    outcome shouldBe an[Unreachable]
    outcome.asInstanceOf[Unreachable].message should include(s"127.0.0.1:$closedPort")
    an[ExecutorRequestFailed] should be thrownBy Await.result(nobody.destroy("c1"), 10.seconds)
  }

  it should "fail fast while the executor is down and use it again soon after it is back" in {
    val port = TestExecutor.freePort()
    val later = new ExecutorClient(WasmExecutorConfig(url = s"http://127.0.0.1:$port"))
    def ask() = Await.result(later.run("c1", JsObject("value" -> JsObject("mode" -> JsString("ok"))), 5.seconds, 1000, 1000), 10.seconds)
    for (_ <- 1 to 6) {
      val start = System.nanoTime()
      ask() shouldBe an[Unreachable]
      (System.nanoTime() - start).nanos should be < 1.second
    }
    val back = new ScriptedServer((_, _, _, out, _) => respond(out, 200, """{"ok":true}"""), port)
    try {
      val start = System.nanoTime()
      ask() shouldBe Answered(200, """{"ok":true}""", None)
      (System.nanoTime() - start).nanos should be < 2.seconds
    } finally back.close()
  }

  it should "give up after the time limit" in {
    val start = System.nanoTime()
    run("slow", timeout = 300.millis) shouldBe TimedOut(300.millis)
    (System.nanoTime() - start).nanos should be < 2.seconds
  }

  it should "refuse ids the executor would not accept" in {
    an[IllegalArgumentException] should be thrownBy client.run("../x", JsObject(), 1.second, 1, 1)
  }

  behavior of "ContainerLogReader"

  it should "wait for late sentinels and keep the next activation's lines for later" in {
    val reader = client.logReader("late")
    val first = Await.result(reader.collect(1 << 20, waitForSentinel = true), 5.seconds)
    first.complete shouldBe true
    first.truncated shouldBe false
    first.lines.map(l => l.stream -> l.log) shouldBe Seq("stdout" -> "one\n", "stderr" -> "two\n")
    val second = Await.result(reader.collect(1 << 20, waitForSentinel = true), 5.seconds)
    second.complete shouldBe true
    second.lines.map(_.log) shouldBe Seq("three\n")
  }

  it should "give up waiting after log-wait and say that data might be missing" in {
    val logs = Await.result(client.logReader("never").collect(1 << 20, waitForSentinel = true), 5.seconds)
    logs.complete shouldBe false
    logs.lines.map(_.log) should contain("partial\n")
    logs.withNotices(1 << 20).last.log shouldBe ExecutorLogs.CollectionFailureNotice
  }

  it should "not wait when asked not to, and find nothing for a container that is gone" in {
    val now = Await.result(client.logReader("never").collect(1 << 20, waitForSentinel = false), 5.seconds)
    now.complete shouldBe true
    now.lines.map(_.log) shouldBe Seq("partial\n")
    val gone = Await.result(client.logReader("gone").collect(1 << 20, waitForSentinel = true), 5.seconds)
    gone shouldBe ActivationLogs(Vector.empty, truncated = false, complete = true)
  }

  behavior of "ExecutorAdmin"

  it should "say clearly that the executor is unreachable" in {
    val closedPort = TestExecutor.freePort()
    val admin = new ExecutorAdmin(WasmExecutorConfig(url = s"http://127.0.0.1:$closedPort"))
    val e = the[ExecutorRequestFailed] thrownBy admin.removeOwned("wsk0")
    e.outcome shouldBe an[Unreachable]
    e.getMessage should include("unreachable")
  }
}
