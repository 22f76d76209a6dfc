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

// What this file is for: unit tests of the pure protocol pieces — /init enrichment, container
// ids and ownership, log-line parsing, cutting one activation's logs out of the pending lines
// (sentinels, byte limit, lines of the next activation), and OpenWhisk's notice texts.

package org.apache.openwhisk.core.containerpool.wasm.client

import org.scalatest.flatspec.AnyFlatSpec
import org.scalatest.matchers.should.Matchers
import spray.json._

import scala.concurrent.duration._

class ProtocolSpec extends AnyFlatSpec with Matchers {

  private val initializer =
    """{"name":"hello","main":"main","binary":true,"code":"AGFzbQ==","env":{"A":"1","__OW_API_HOST":"mine"}}""".parseJson.asJsObject

  behavior of "InitBody.enrich"

  it should "add the namespace, annotations, limits and the base environment under the action's own" in {
    val value = InitBody.enrich(
      initializer,
      Some("alice"),
      Some(JsObject("dir" -> JsString("/tmp/cache"), "net_access" -> JsTrue)),
      InitLimits(256, 60.seconds, 4, Some(10L)),
      Map("__OW_API_HOST" -> "http://controller:3233", "EXTRA" -> "x"))
    value.fields("name") shouldBe JsString("hello")
    value.fields("code") shouldBe JsString("AGFzbQ==")
    value.fields("namespace") shouldBe JsString("alice")
    value.fields("annotations") shouldBe JsObject("dir" -> JsString("/tmp/cache"), "net_access" -> JsTrue)
    value.fields("limits") shouldBe JsObject(
      "memory" -> JsNumber(256),
      "timeout" -> JsNumber(60000),
      "concurrency" -> JsNumber(4),
      "logs" -> JsNumber(10))
    // the action's own variable wins over the invoker's
    value.fields("env") shouldBe JsObject("A" -> JsString("1"), "__OW_API_HOST" -> JsString("mine"), "EXTRA" -> JsString("x"))
  }

  it should "omit what it does not know, and replace stale fields" in {
    val bare = JsObject(
      "name" -> JsString("x"),
      "namespace" -> JsString("stale"),
      "annotations" -> JsString("stale"),
      "limits" -> JsNumber(1))
    val value = InitBody.enrich(bare, None, None, InitLimits())
    value shouldBe JsObject("name" -> JsString("x"))
    InitBody.enrich(bare, None, Some(JsObject()), InitLimits(timeoutMs = Some(100))) shouldBe
      JsObject("name" -> JsString("x"), "limits" -> JsObject("timeout" -> JsNumber(100)))
  }

  it should "pass the action's kind, written over one already in the initializer" in {
    val forged = JsObject(initializer.fields + ("kind" -> JsString("wasm:0.1")))
    InitBody.enrich(forged, None, None, InitLimits(), kind = Some("nodejs:20")).fields("kind") shouldBe
      JsString("nodejs:20")
    InitBody.enrich(forged, None, None, InitLimits()).fields should not contain key("kind")
  }

  it should "write the invoker's namespace over one already in the initializer" in {
    val forged = JsObject(initializer.fields + ("namespace" -> JsString("bob")))
    val value = InitBody.enrich(forged, Some("alice"), None, InitLimits())
    value.fields("namespace") shouldBe JsString("alice")
    InitBody.enrich(forged, None, None, InitLimits()).fields should not contain key("namespace")
  }

  it should "forward only the annotations the executor uses" in {
    val annotations = JsObject(
      "dir" -> JsString("/data"),
      "net_access" -> JsTrue,
      "require-whisk-auth" -> JsString("s3cr3t-token"),
      "exec" -> JsString("wasm:0.1"),
      "provide-api-key" -> JsTrue,
      "secret" -> JsString("do not leak"))
    val value = InitBody.enrich(initializer, Some("alice"), Some(annotations), InitLimits())
    InitBody.ForwardedAnnotations shouldBe Set("dir", "net_access")
    value.fields("annotations") shouldBe JsObject("dir" -> JsString("/data"), "net_access" -> JsTrue)
    value.compactPrint should not include "s3cr3t-token"
    value.compactPrint should not include "do not leak"
    InitBody.enrich(initializer, None, Some(JsObject("net_access" -> JsFalse, "web-export" -> JsTrue)), InitLimits())
      .fields("annotations") shouldBe JsObject("net_access" -> JsFalse)
  }

  it should "omit the annotations when none of the forwarded ones is there" in {
    val others = JsObject(
      "require-whisk-auth" -> JsString("s3cr3t-token"),
      "exec" -> JsString("wasm:0.1"),
      "provide-api-key" -> JsFalse)
    val value = InitBody.enrich(initializer, Some("alice"), Some(others), InitLimits())
    value.fields should not contain key("annotations")
    value.compactPrint should not include "s3cr3t-token"
  }

  behavior of "ContainerIds"

  it should "make valid, unique-per-factory ids that keep the invoker prefix" in {
    val id = ContainerIds.forName("wsk0_12_guest_hello", "k3x9")
    id shouldBe "wsk0_12_guest_hello-k3x9"
    ContainerIds.isValid(id) shouldBe true
    ContainerIds.isOwnedBy(id, "wsk0") shouldBe true
  }

  it should "replace characters the executor refuses and respect the length limit" in {
    val id = ContainerIds.forName("wsk0_1_gäst_" + "a" * 300, "n1")
    ContainerIds.isValid(id) shouldBe true
    id.length shouldBe ContainerIds.MaxLength
    id should startWith("wsk0_1_g_st_")
    id should endWith("-n1")
  }

  it should "not let one invoker claim another's containers" in {
    ContainerIds.isOwnedBy("wsk10_1_a-n", "wsk1") shouldBe false
    ContainerIds.isOwnedBy("wsk1_1_a-n", "wsk1") shouldBe true
    ContainerIds.isOwnedBy("other", "wsk1") shouldBe false
  }

  behavior of "ExecutorLogs"

  private def line(stream: String, log: String) =
    LogLine("2026-11-22T10:00:00.123456789Z", stream, log).toJson.compactPrint
  private def sentinels = Seq(line("stdout", ExecutorLogs.Sentinel + "\n"), line("stderr", ExecutorLogs.Sentinel + "\n"))

  it should "parse json-file lines and keep anything else as output" in {
    ExecutorLogs.parse(line("stderr", "boom\n")) shouldBe LogLine("2026-11-22T10:00:00.123456789Z", "stderr", "boom\n")
    val odd = ExecutorLogs.parse("not json")
    odd.stream shouldBe "stdout"
    odd.log shouldBe "not json"
    ExecutorLogs.parse(line("stdout", ExecutorLogs.Sentinel + "\n")).isSentinel shouldBe true
    ExecutorLogs.parse(line("stdout", ExecutorLogs.Sentinel)).isSentinel shouldBe true
  }

  it should "use OpenWhisk's notice texts" in {
    ExecutorLogs.truncationNotice(10485760) shouldBe
      "Logs were truncated because the total bytes size exceeds the limit of 10485760 bytes."
    ExecutorLogs.CollectionFailureNotice shouldBe
      "There was an issue while collecting your logs. Data might be missing."
  }

  behavior of "ActivationLogCut"

  it should "take one activation, drop its sentinels and leave the next activation's lines" in {
    val first = Seq(line("stdout", "a\n"), line("stderr", "b\n")) ++ sentinels
    val second = Seq(line("stdout", "c\n")) ++ sentinels
    val cut = new ActivationLogCut(1 << 20)
    val rest = (first ++ second).dropWhile(cut.offer)
    cut.done shouldBe true
    val logs = cut.result(complete = false)
    logs.complete shouldBe true
    logs.truncated shouldBe false
    logs.lines.map(l => (l.stream, l.log)) shouldBe Seq("stdout" -> "a\n", "stderr" -> "b\n")
    rest shouldBe second
  }

  it should "stop keeping lines at the byte limit but still find the end of the activation" in {
    val lines = (1 to 10).map(i => line("stdout", s"line $i\n"))
    val each = ExecutorLogs.weight(lines.head)
    val cut = new ActivationLogCut(each * 3)
    val next = line("stdout", "next activation\n")
    val rest = (lines ++ sentinels :+ next).dropWhile(cut.offer)
    rest shouldBe Seq(next)
    val logs = cut.result(complete = false)
    logs.truncated shouldBe true
    logs.lines.map(_.log) shouldBe Seq("line 1\n", "line 2\n", "line 3\n")
    val out = logs.withNotices(each * 3)
    out.last.stream shouldBe "stderr"
    out.last.log shouldBe ExecutorLogs.truncationNotice(each * 3)
  }

  it should "report an activation without its sentinels as incomplete only when asked to wait" in {
    val cut = new ActivationLogCut(1000)
    Seq(line("stdout", "x\n")).foreach(cut.offer)
    cut.done shouldBe false
    cut.result(complete = false).withNotices(1000).last.log shouldBe ExecutorLogs.CollectionFailureNotice
    val notWaiting = cut.result(complete = true)
    notWaiting.withNotices(1000).map(_.log) shouldBe Seq("x\n")
  }

  behavior of "ExecutorOutcome"

  it should "read the error text of an answer" in {
    ExecutorOutcome.Answered(502, """{"error":"trap"}""").errorMessage shouldBe Some("trap")
    ExecutorOutcome.Answered(502, """{"error":{"code":1}}""").errorMessage shouldBe Some("""{"code":1}""")
    ExecutorOutcome.Answered(502, "oops").errorMessage shouldBe None
    ExecutorOutcome.Answered(200, "{}").ok shouldBe true
    ExecutorOutcome.Answered(200, "{}", Some(Truncation(10, 5))).ok shouldBe false
  }

  it should "refuse a bad configuration" in {
    an[IllegalArgumentException] should be thrownBy WasmExecutorConfig(url = "ftp://x")
    an[IllegalArgumentException] should be thrownBy WasmExecutorConfig(maxOpenRequests = 100)
    WasmExecutorConfig(url = "http://127.0.0.1:1/").baseUrl shouldBe "http://127.0.0.1:1"
  }
}
