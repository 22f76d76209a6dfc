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
// namespace, the annotations the executor uses and the limits to the /init body, maps the
// client's outcomes onto OpenWhisk's types, and reads the container's logs back as OpenWhisk
// log lines.

package org.apache.openwhisk.core.containerpool.wasm

import java.time.Instant
import java.util.concurrent.TimeoutException

import org.apache.pekko.actor.ActorSystem
import org.apache.pekko.stream.scaladsl.Source
import org.apache.pekko.util.ByteString
import org.apache.openwhisk.common.{Logging, TransactionId}
import org.apache.openwhisk.core.containerpool._
import org.apache.openwhisk.core.containerpool.wasm.client._
import org.apache.openwhisk.core.entity.ActivationResponse.{ContainerResponse, NoResponseReceived, Timeout}
import org.apache.openwhisk.core.entity.size._
import org.apache.openwhisk.core.entity.{
  ActivationResponse,
  ByteSize,
  EntityName,
  EntityPath,
  ExecutableWhiskAction,
  FullyQualifiedEntityName,
  LogLimit,
  Parameters,
  WhiskAction
}
import org.apache.openwhisk.http.Messages
import spray.json._

import scala.concurrent.duration._
import scala.concurrent.{ExecutionContext, Future}
import scala.util.Try
import scala.util.control.NonFatal

/** The executor could not be reached; reported to the user as a system (whisk) error, not theirs. */
final case class WasmExecutorUnreachable(message: String) extends Exception(message)

/**
 * The executor no longer holds the container (it restarted, or the container was removed):
 * OpenWhisk reschedules the activation where it can, else it is a system (whisk) error.
 */
final case class WasmContainerLost(message: String) extends Exception(message)

/**
 * @param id          the container's id in the executor (see ContainerIds)
 * @param addr        the executor's address (shared by all its containers)
 * @param executor    the invoker's client for that executor
 * @param memory      the memory OpenWhisk reserved for this container; sent as `limits.memory`
 * @param createdFor  the action the container was created for, when OpenWhisk said so at creation
 *                    (used when `initialize` is not given the action, as on the scheduler path)
 * @param baseEnv     environment a Docker runtime would get at start (`__OW_API_HOST`, operator extras)
 * @param capacityRetryFor how long to keep sending /init or /run while the executor answers 503
 * @param lookupAction finds an action by name, for an /init that OpenWhisk sends without the action
 */
class WasmContainer(protected val id: ContainerId,
                    protected[core] val addr: ContainerAddress,
                    executor: ExecutorClient,
                    memory: ByteSize,
                    createdFor: Option[ExecutableWhiskAction],
                    baseEnv: Map[String, String],
                    capacityRetryFor: FiniteDuration,
                    lookupAction: (FullyQualifiedEntityName, TransactionId) => Future[WhiskAction])(
  implicit override protected val as: ActorSystem,
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

  override def initialize(initializer: JsObject,
                          timeout: FiniteDuration,
                          maxConcurrent: Int,
                          entity: Option[WhiskAction] = None)(implicit transid: TransactionId): Future[Interval] = {
    val started = Instant.now
    def failed(message: String) =
      Future.failed(InitializationError(Interval(started, Instant.now), ActivationResponse.whiskError(message)))
    describeAction(initializer, entity).flatMap {
      case Left(message) => failed(message)
      case Right(described) =>
        val limits = InitLimits(memory.toMB, timeout, maxConcurrent, described.map(_.logsMb))
        val value =
          InitBody.enrich(
            initializer,
            described.map(_.namespace),
            described.map(_.annotations),
            limits,
            baseEnv,
            described.map(_.kind))
        super.initialize(value, timeout, maxConcurrent, entity).recoverWith {
          case WasmExecutorUnreachable(message) => failed(message)
        }
    }
  }

  /**
   * The action's annotations, log limit (MB) and root namespace for /init. OpenWhisk's
   * ContainerPool path passes the action to `createContainer` and `initialize`; the scheduler
   * path passes it to neither, so there it is looked up by the `__OW_ACTION_NAME` of the init's
   * environment, and the namespace is that name's root (the invoker sets `__OW_*` over the
   * action's own variables, so an action cannot choose it). Right(None): no name to look up
   * (the executor's defaults apply, and it refuses a `dir` grant); Left: the lookup failed, and
   * running the action without the grants its annotations ask for would fail in confusing ways.
   */
  private def describeAction(initializer: JsObject, entity: Option[WhiskAction])(
    implicit transid: TransactionId): Future[Either[String, Option[WasmContainer.Described]]] = {
    def described(annotations: Parameters, logs: LogLimit, namespace: EntityPath, kind: String) =
      WasmContainer.Described(annotations.toJsObject, logs.megabytes.toLong, namespace.root.asString, kind)
    val passed = entity
      .map(e => described(e.annotations, e.limits.logs, e.namespace, e.exec.kind))
      .orElse(createdFor.map(a => described(a.annotations, a.limits.logs, a.namespace, a.exec.kind)))
    (passed, WasmContainer.actionName(initializer)) match {
      case (Some(known), _) => Future.successful(Right(Some(known)))
      case (None, None)     => Future.successful(Right(None))
      case (None, Some(name)) =>
        lookupAction(name, transid)
          .map(action => Right(Some(described(action.annotations, action.limits.logs, name.path, action.exec.kind))))
          .recover {
            case NonFatal(t) =>
              logging.error(this, s"could not look up action $name for its annotations and log limit: $t")
              Left(s"The annotations and limits of action $name could not be read: ${t.getMessage}")
          }
    }
  }

  override def run(parameters: JsValue,
                   environment: JsObject,
                   timeout: FiniteDuration,
                   maxConcurrent: Int,
                   maxResponse: ByteSize,
                   truncation: ByteSize,
                   reschedule: Boolean)(implicit transid: TransactionId): Future[(Interval, ActivationResponse)] = {
    val started = Instant.now
    super.run(parameters, environment, timeout, maxConcurrent, maxResponse, truncation, reschedule).recoverWith {
      // A resumed container that cannot be reached, or is gone, is OpenWhisk's cue to run the
      // activation elsewhere. OpenWhisk re-runs only those; for others a health error would
      // drop the activation, so they end as a system error (never as the action's error).
      case WasmExecutorUnreachable(_) if reschedule => Future.failed(ContainerHealthError(transid, id.asString))
      case WasmContainerLost(message) if reschedule =>
        logging.warn(this, s"$message; the activation is rescheduled")
        Future.failed(ContainerHealthError(transid, id.asString))
      case WasmExecutorUnreachable(message) =>
        Future.successful((Interval(started, Instant.now), ActivationResponse.whiskError(message)))
      case WasmContainerLost(message) =>
        logging.warn(this, message)
        Future.successful((Interval(started, Instant.now), ActivationResponse.whiskError(message)))
    }
  }

  /**
   * Sends `/init` or `/run` to this container's route in the executor. Answers become
   * OpenWhisk's ContainerResponse, so the trait interprets them exactly as for a Docker
   * runtime; a 503 stays a 503, which the trait turns into ContainerHealthError (OpenWhisk's
   * reschedule path), once the client has retried for `capacityRetryFor`.
   */
  override protected def callContainer(path: String,
                                       body: JsObject,
                                       timeout: FiniteDuration,
                                       maxConcurrent: Int,
                                       maxResponse: ByteSize,
                                       truncation: ByteSize,
                                       retry: Boolean,
                                       reschedule: Boolean)(implicit transid: TransactionId): Future[RunResult] = {
    val started = Instant.now
    val action = path.stripPrefix("/")
    executor
      .post(id.asString, action, body, timeout, maxResponse.toBytes, truncation.toBytes, capacityRetryFor, initializedBy)
      .flatMap { outcome =>
        val interval = Interval(started, Instant.now)
        outcome match {
          case ExecutorOutcome.Answered(status, text, truncated) =>
            if (action == "init" && status == 200) initializedBy = executor.instance
            val cut = truncated.map(t => (t.actualBytes.B, t.maxBytes.B))
            Future.successful(RunResult(interval, Right(ContainerResponse(status, text, cut))))
          case ExecutorOutcome.Reschedule(text) =>
            logging.warn(this, s"wasm executor at capacity for $id ($path): $text")
            Future.successful(RunResult(interval, Right(ContainerResponse(503, text, None))))
          case ExecutorOutcome.ContainerLost(reason) =>
            Future.failed(WasmContainerLost(reason))
          case u: ExecutorOutcome.Unreachable =>
            logging.error(this, s"${u.message} ($path of $id)")
            Future.failed(WasmExecutorUnreachable(u.message))
          case ExecutorOutcome.TimedOut(after) =>
            Future.successful(RunResult(interval, Left(Timeout(new TimeoutException(s"no answer from $id within $after")))))
          case ExecutorOutcome.NoResponse(reason) =>
            logging.warn(this, s"no usable answer from wasm executor for $id ($path): $reason")
            Future.successful(RunResult(interval, Left(NoResponseReceived())))
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

  /**
   * What /init needs to know of the action besides OpenWhisk's initializer.
   *
   * @param annotations all of the action's annotations (InitBody forwards only the executor's)
   * @param logsMb      the action's log limit in MB
   * @param namespace   the action's root namespace (`alice` for `/alice/pkg/hello`)
   * @param kind        the action's kind (`nodejs:*` and `python:*` run on the executor's engines)
   */
  final case class Described(annotations: JsObject, logsMb: Long, namespace: String, kind: String)

  /** The action an init's environment names (`__OW_ACTION_NAME`, fully qualified), if any. */
  def actionName(initializer: JsObject): Option[FullyQualifiedEntityName] =
    for {
      JsObject(env) <- initializer.fields.get("env")
      JsString(name) <- env.get("__OW_ACTION_NAME")
      namespace <- env.get("__OW_NAMESPACE").collect { case JsString(n) => n }.orElse(Some("_"))
      ns <- Try(EntityName(namespace)).toOption
      fqn <- FullyQualifiedEntityName.resolveName(JsString(name), ns)
    } yield fqn
}
