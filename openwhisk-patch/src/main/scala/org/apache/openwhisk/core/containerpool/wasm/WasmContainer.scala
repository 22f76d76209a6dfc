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

// What this file is for: an OpenWhisk Container that lives inside a wasm-executor process
// instead of Docker. It is a thin adapter: OpenWhisk's Container trait keeps its own init/run
// logic (markers, timeouts, result interpretation); this class only sends the requests to
// `/{id}/init` and `/{id}/run` of the executor through the executor-client, adds the action's
// namespace, the annotations the executor uses and the limits to the /init body, turns the
// client's verdicts (whose fault an outcome is, see Attribution) into OpenWhisk's types, and
// reads the container's logs back as OpenWhisk log lines.

package org.apache.openwhisk.core.containerpool.wasm

import java.time.Instant

import org.apache.pekko.actor.ActorSystem
import org.apache.pekko.stream.scaladsl.Source
import org.apache.pekko.util.ByteString
import org.apache.openwhisk.common.{Logging, TransactionId}
import org.apache.openwhisk.core.containerpool._
import org.apache.openwhisk.core.containerpool.wasm.client._
import org.apache.openwhisk.core.entity.ActivationResponse.ContainerResponse
import org.apache.openwhisk.core.entity.size._
import org.apache.openwhisk.core.entity.{
  ActivationResponse,
  ByteSize,
  EntityPath,
  ExecutableWhiskAction,
  LogLimit,
  WhiskAction
}
import org.apache.openwhisk.http.Messages
import spray.json._

import scala.concurrent.duration._
import scala.concurrent.{ExecutionContext, Future}
import scala.util.control.NonFatal

/**
 * The platform failed this /init or /run (see Attribution): the activation ends as a system
 * (whisk) error with `userText`; what happened in detail is in the invoker's log.
 */
final case class WasmSystemError(userText: String, interval: Interval) extends Exception(userText)

/**
 * @param id          the container's id in the executor (see ContainerIds)
 * @param addr        the executor's address (shared by all its containers)
 * @param executor    the invoker's client for that executor
 * @param memory      the memory OpenWhisk reserved for this container; sent as `limits.memory`
 * @param createdFor  the action the container was created for, when OpenWhisk said so at creation
 *                    (a prewarmed container learns it only from `initialize`)
 * @param baseEnv     environment a Docker runtime would get at start (`__OW_API_HOST`, operator extras)
 * @param schedulerPath whether the invoker is the scheduler path's, which can place a rescheduled
 *                    activation on another invoker (see Attribution.verdict)
 * @param capacityRetry how long to send /init or /run again while the executor answers a passing
 *                    503: before sending the activation elsewhere, and where that cannot be done
 */
class WasmContainer(protected val id: ContainerId,
                    protected[core] val addr: ContainerAddress,
                    executor: ExecutorClient,
                    memory: ByteSize,
                    createdFor: Option[ExecutableWhiskAction],
                    baseEnv: Map[String, String],
                    schedulerPath: Boolean,
                    capacityRetry: WasmContainer.CapacityRetry)(implicit override protected val as: ActorSystem,
                                                      protected val ec: ExecutionContext,
                                                      protected val logging: Logging)
    extends Container {

  private val logReader = executor.logReader(id.asString)

  /** The executor instance that answered this container's /init (None before it). */
  @volatile private var initializedBy: Option[String] = None

  /** Nothing to pause: a Wasm container uses no CPU between activations. */
  override def suspend()(implicit transid: TransactionId): Future[Unit] = Future.successful(())

  override def resume()(implicit transid: TransactionId): Future[Unit] = Future.successful(())

  /**
   * Frees the module and its state in the executor. A failure is logged, not raised: the
   * executor has then lost the container anyway, and the factory's cleanup catches leftovers.
   */
  override def destroy()(implicit transid: TransactionId): Future[Unit] =
    executor.destroy(id.asString).recover {
      case NonFatal(t) => logging.warn(this, s"could not destroy wasm container $id: ${t.getMessage}")
    }

  /**
   * Sends the initializer with what the executor needs of the action: its root namespace, the
   * annotations it acts on, its limits and kind. Both of OpenWhisk's paths give the action here
   * (the scheduler path once apply.sh's change to FunctionPullingContainerProxy is in), or at
   * creation; without it the executor's defaults apply, and it refuses a `dir` grant.
   */
  override def initialize(initializer: JsObject,
                          timeout: FiniteDuration,
                          maxConcurrent: Int,
                          entity: Option[WhiskAction] = None)(implicit transid: TransactionId): Future[Interval] = {
    val described = entity
      .map(e => WasmContainer.Described(e.annotations.toJsObject, e.limits.logs, e.namespace, e.exec.kind))
      .orElse(createdFor.map(a => WasmContainer.Described(a.annotations.toJsObject, a.limits.logs, a.namespace, a.exec.kind)))
    val limits = InitLimits(memory.toMB, timeout, maxConcurrent, described.map(_.logs.megabytes.toLong))
    val value = InitBody.enrich(
      initializer,
      described.map(_.namespace.root.asString),
      described.map(_.annotations),
      limits,
      baseEnv,
      described.map(_.kind))
    super.initialize(value, timeout, maxConcurrent, entity).recoverWith {
      case WasmSystemError(text, interval) =>
        Future.failed(InitializationError(interval, ActivationResponse.whiskError(text)))
    }
  }

  override def run(parameters: JsValue,
                   environment: JsObject,
                   timeout: FiniteDuration,
                   maxConcurrent: Int,
                   maxResponse: ByteSize,
                   truncation: ByteSize,
                   reschedule: Boolean)(implicit transid: TransactionId): Future[(Interval, ActivationResponse)] =
    super.run(parameters, environment, timeout, maxConcurrent, maxResponse, truncation, reschedule).recover {
      case WasmSystemError(text, interval) => (interval, ActivationResponse.whiskError(text))
    }

  /**
   * Sends `/init` or `/run` to this container's route in the executor and applies the
   * Attribution's verdict: the action's own answers become OpenWhisk's ContainerResponse, which
   * the trait interprets exactly as a Docker runtime's; a platform failure fails the call with
   * WasmSystemError (a whisk error with a fixed text); "run it elsewhere" with
   * ContainerHealthError. The interval starts when the attempt the executor took was sent.
   */
  override protected def callContainer(path: String,
                                       body: JsObject,
                                       timeout: FiniteDuration,
                                       maxConcurrent: Int,
                                       maxResponse: ByteSize,
                                       truncation: ByteSize,
                                       retry: Boolean,
                                       reschedule: Boolean)(implicit transid: TransactionId): Future[RunResult] = {
    val call = Call(path.stripPrefix("/"), reschedule, schedulerPath, maxConcurrent)
    val retryFor = if (call.busyGoesElsewhere) capacityRetry.beforeReschedule else capacityRetry.otherwise
    executor
      .exchange(id.asString, call.route, body, timeout, maxResponse.toBytes, truncation.toBytes, retryFor, initializedBy)
      .flatMap {
        case Exchange(outcome, sent) =>
          val interval = Interval(sent, Instant.now)
          Attribution.verdict(call, outcome) match {
            case Verdict.ActionsOwn(answer) =>
              if (call.route == "init" && answer.status == 200) initializedBy = executor.instance
              val cut = answer.truncated.map(t => (t.actualBytes.B, t.maxBytes.B))
              Future.successful(RunResult(interval, Right(ContainerResponse(answer.status, answer.body, cut))))
            case Verdict.RunElsewhere(detail) =>
              logging.warn(this, s"wasm container ${id.asString} ($path): $detail; the activation is rescheduled")
              Future.failed(ContainerHealthError(transid, id.asString))
            case Verdict.SystemError(text, detail) =>
              logging.error(this, s"wasm container ${id.asString} ($path): $detail")
              Future.failed(WasmSystemError(text, interval))
          }
      }
  }

  /**
   * The logs of the activation that just ended, as OpenWhisk's json log lines: sentinels
   * removed, at most `limit` bytes, with OpenWhisk's notice when lines were cut or missing.
   */
  def logs(limit: ByteSize, waitForSentinel: Boolean)(implicit transid: TransactionId): Source[ByteString, Any] =
    Source
      .future(logReader.collect(limit.toBytes, waitForSentinel))
      .mapConcat(_.withNotices(limit.toBytes, _ => Messages.truncateLogs(limit), Messages.logFailure))
      .recover {
        case NonFatal(t) =>
          logging.warn(this, s"could not read the logs of wasm container $id: ${t.getMessage}")
          LogLine(Instant.now.toString, "stderr", Messages.logFailure)
      }
      .map(line => ByteString(line.toJson.compactPrint))
}

object WasmContainer {

  /** How long a passing 503 is sent again: before a reschedule, and where there is none. */
  final case class CapacityRetry(beforeReschedule: FiniteDuration, otherwise: FiniteDuration)

  /** What /init needs to know of the action besides OpenWhisk's initializer. */
  final case class Described(annotations: JsObject, logs: LogLimit, namespace: EntityPath, kind: String)
}
