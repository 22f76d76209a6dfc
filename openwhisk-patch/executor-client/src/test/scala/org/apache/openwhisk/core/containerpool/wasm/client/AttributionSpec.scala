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

// What this file is for: the failure mapping, case by case — every way an /init or /run can end,
// on both of OpenWhisk's invoker paths, and whose fault OpenWhisk is told it is; and that no
// text a user sees names an address, a container id or an exception class.

package org.apache.openwhisk.core.containerpool.wasm.client

import org.scalatest.flatspec.AnyFlatSpec
import org.scalatest.matchers.should.Matchers

import scala.concurrent.duration._

class AttributionSpec extends AnyFlatSpec with Matchers {
  import Attribution._
  import ExecutorOutcome._
  import Verdict._

  private def error(status: Int, text: String) =
    Answered(status, spray.json.JsObject("error" -> spray.json.JsString(text)).compactPrint)
  private val unreachable =
    Unreachable("http://10.0.0.7:9000", new java.net.ConnectException("Connection refused"))

  private def verdict(route: String, outcome: ExecutorOutcome, reschedule: Boolean, scheduler: Boolean, concurrency: Int = 1) =
    Attribution.verdict(Call(route, reschedule, scheduler, concurrency), outcome)

  /**
   * The verdict's kind on the ContainerPool path (a /run not resumed, one resumed) and on the
   * scheduler path, for an action that runs one activation per container at a time.
   */
  private def kinds(route: String, outcome: ExecutorOutcome, concurrency: Int = 1): Seq[String] =
    Seq((false, false), (true, false), (true, true)).map {
      case (reschedule, scheduler) =>
        verdict(route, outcome, if (route == "init") false else reschedule, scheduler, concurrency) match {
          case ActionsOwn(_)     => "action"
          case SystemError(_, _) => "system"
          case RunElsewhere(_)   => "elsewhere"
        }
    }

  behavior of "Attribution.verdict"

  it should "leave the action's own outcomes to OpenWhisk, as a Docker runtime's" in {
    for (route <- Seq("init", "run")) {
      kinds(route, Answered(200, """{"ok":true}""")) shouldBe Seq.fill(3)("action")
      kinds(route, error(502, "The action trapped: unreachable")) shouldBe Seq.fill(3)("action")
    }
    kinds("run", Answered(200, "x" * 100, Some(Truncation(5000, 1000)))) shouldBe Seq.fill(3)("action")
    for (refusal <- InitRefusals) kinds("init", error(403, refusal)) shouldBe Seq.fill(3)("action")
  }

  it should "make every other answer a system error, never the action's" in {
    val platform = Seq(
      400 -> "invalid JSON body: expected value",
      401 -> "this executor requires its bearer token (Authorization: Bearer …)",
      403 -> "the Host \"10.0.0.7:9000\" is not served here",
      403 -> "requests from web browsers are not accepted",
      404 -> "container wsk0_1_x-abc was destroyed while it initialized",
      405 -> "method not allowed on this route",
      408 -> "the request body did not arrive within 5000 ms",
      413 -> "request body too large",
      415 -> "expected application/json",
      500 -> "The executor could not run the action: worker lost")
    for ((status, text) <- platform; route <- Seq("init", "run")) {
      withClue(s"$status at /$route: ") {
        kinds(route, error(status, text)) shouldBe Seq.fill(3)("system")
        verdict(route, error(status, text), reschedule = true, scheduler = true) shouldBe
          SystemError(SystemFailureText, s"the executor answered /$route with HTTP $status: $text")
      }
    }
    // The init refusals are the action's only as the executor words them.
    kinds("run", error(403, "Cannot initialize the action more than once.")) shouldBe Seq.fill(3)("system")
  }

  it should "run the activation elsewhere when the executor is busy only where the scheduler can place it" in {
    val busy = AtCapacity("""{"error":"the executor is at capacity"}""", passes = true)
    kinds("run", busy) shouldBe Seq("system", "system", "elsewhere")
    kinds("init", busy) shouldBe Seq("system", "system", "elsewhere")
    val full = AtCapacity("""{"error":"the executor holds its maximum of 3 containers; retry elsewhere"}""", passes = false)
    kinds("init", full) shouldBe Seq("system", "system", "elsewhere")
    verdict("run", busy, reschedule = true, scheduler = false) match {
      case SystemError(text, detail) =>
        text shouldBe AtCapacityText
        detail should include("at capacity")
      case other => fail(s"$other")
    }
    // A scheduler-path /run that OpenWhisk would not reschedule is never handed over.
    verdict("run", busy, reschedule = false, scheduler = true) shouldBe a[SystemError]
  }

  it should "never send an activation elsewhere from a container that runs several at a time" in {
    // OpenWhisk re-runs only the activation that met the health error; the others in flight on
    // that container would be dropped without a record. So they all end as system errors.
    val busy = AtCapacity("""{"error":"the executor is at capacity"}""", passes = true)
    val lost = ContainerLost("the wasm executor restarted")
    for (outcome <- Seq(busy, lost)) {
      kinds("run", outcome, concurrency = 3) shouldBe Seq("system", "system", "system")
    }
    kinds("init", busy, concurrency = 3) shouldBe Seq("system", "system", "system")
    Call("run", reschedule = true, schedulerPath = true, maxConcurrent = 3).busyGoesElsewhere shouldBe false
    Call("run", reschedule = true, schedulerPath = true, maxConcurrent = 1).busyGoesElsewhere shouldBe true
  }

  it should "run the activation elsewhere when its container is gone, where OpenWhisk reschedules" in {
    val lost = ContainerLost("the wasm executor restarted since container wsk0_1_x-abc was initialized")
    kinds("run", lost) shouldBe Seq("system", "elsewhere", "elsewhere")
    verdict("run", lost, reschedule = false, scheduler = false) shouldBe SystemError(ContainerLostText, lost.reason)
    // An executor that does not answer at all is a system error everywhere: the invoker's health
    // counts it, so a dead executor takes its invoker out of rotation.
    kinds("run", unreachable) shouldBe Seq("system", "system", "system")
    kinds("init", unreachable) shouldBe Seq("system", "system", "system")
  }

  it should "make silence and broken exchanges system errors" in {
    for (route <- Seq("init", "run"); outcome <- Seq(TimedOut(62.seconds), NoResponse("answer 200 without Content-Length"))) {
      kinds(route, outcome) shouldBe Seq.fill(3)("system")
    }
  }

  it should "show users fixed texts and keep the details for the invoker's log" in {
    val outcomes = Seq(
      error(401, "this executor requires its bearer token"),
      error(500, "cannot prepare the namespace's directory: /var/lib/wasm-executor/ns/alice.img"),
      AtCapacity("""{"error":"at capacity"}""", passes = true),
      ContainerLost("the wasm executor does not hold container wsk0_12_guest_hello-kx2"),
      unreachable,
      TimedOut(62.seconds),
      NoResponse("exchange with the executor failed: org.apache.pekko.stream.StreamTcpException: Broken pipe"))
    val texts = for (route <- Seq("init", "run"); o <- outcomes) yield verdict(route, o, reschedule = false, scheduler = false)
    val userTexts = texts.collect { case SystemError(text, _) => text }
    userTexts should have size (outcomes.size * 2).toLong
    userTexts.toSet shouldBe Set(SystemFailureText, AtCapacityText, ContainerLostText)
    for (text <- userTexts) {
      text should not include "http"
      text should not include "wsk0"
      text should not include "Exception"
      text should not include "executor"
    }
    val details = texts.collect { case SystemError(_, detail) => detail }
    details.exists(_.contains("10.0.0.7:9000")) shouldBe true
    details.exists(_.contains("StreamTcpException")) shouldBe true
  }

  behavior of "Attribution.isSchedulerPath"

  it should "recognise FPCInvokerReactive and nothing else" in {
    isSchedulerPath("org.apache.openwhisk.core.invoker.FPCInvokerReactive") shouldBe true
    isSchedulerPath(" org.apache.openwhisk.core.invoker.FPCInvokerReactive ") shouldBe true
    isSchedulerPath("org.apache.openwhisk.core.invoker.InvokerReactive") shouldBe false
    isSchedulerPath("") shouldBe false
  }

  behavior of "RunBody.postponeDeadline"

  it should "move the deadline by the time waited, and leave a body without one alone" in {
    import spray.json._
    val body = JsObject("value" -> JsObject(), "deadline" -> JsString("1060000"), "activation_id" -> JsString("a"))
    RunBody.postponeDeadline(body, 250).fields("deadline") shouldBe JsString("1060250")
    RunBody.postponeDeadline(body, 250).fields("activation_id") shouldBe JsString("a")
    RunBody.postponeDeadline(body, 0) shouldBe body
    val bare = JsObject("value" -> JsObject())
    RunBody.postponeDeadline(bare, 250) shouldBe bare
    val odd = JsObject("deadline" -> JsString("soon"))
    RunBody.postponeDeadline(odd, 250) shouldBe odd
  }
}
