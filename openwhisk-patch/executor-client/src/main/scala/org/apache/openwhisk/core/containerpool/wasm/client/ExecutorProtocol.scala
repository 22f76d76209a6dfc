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

// What this file is for: the pure parts of the executor protocol — the extra fields the invoker
// adds to an /init body (the action's namespace, the annotations the executor uses, limits), how
// container ids are made and recognised, and the outcomes a request to the executor can have.
// Nothing here does I/O, so all of it is unit-tested directly.

package org.apache.openwhisk.core.containerpool.wasm.client

import spray.json._

import scala.concurrent.duration.FiniteDuration

/**
 * The action limits the executor enforces, as sent in `value.limits` of /init. A field left
 * `None` is omitted, and the executor applies its own default.
 *
 * @param memoryMb    linear-memory limit in MB
 * @param timeoutMs   time limit of one activation in milliseconds (the /run `deadline` wins)
 * @param concurrency activations one container may run at the same time
 * @param logsMb      log bytes one activation may write, in MB
 */
final case class InitLimits(memoryMb: Option[Long] = None,
                            timeoutMs: Option[Long] = None,
                            concurrency: Option[Int] = None,
                            logsMb: Option[Long] = None) {
  def toJson: JsObject =
    JsObject(
      Seq(
        memoryMb.map(m => "memory" -> JsNumber(m)),
        timeoutMs.map(t => "timeout" -> JsNumber(t)),
        concurrency.map(c => "concurrency" -> JsNumber(c)),
        logsMb.map(l => "logs" -> JsNumber(l))).flatten.toMap)
}

object InitLimits {
  def apply(memoryMb: Long, timeout: FiniteDuration, concurrency: Int, logsMb: Option[Long]): InitLimits =
    InitLimits(Some(memoryMb), Some(timeout.toMillis), Some(concurrency), logsMb)
}

/** Builds the `value` of an /init request from what OpenWhisk's ContainerProxy produced. */
object InitBody {

  /**
   * The annotations the executor acts on; no other annotation leaves the invoker (some, such as
   * `require-whisk-auth`, hold secrets the executor has no use for).
   */
  val ForwardedAnnotations: Set[String] = Set("dir", "net_access")

  /**
   * Adds to OpenWhisk's initializer (`name`, `main`, `binary`, `code`, `env`):
   *  - `namespace`: the root namespace of the action (`alice` for `/alice/pkg/hello`), as the
   *    invoker knows it; the executor places every `dir` grant beneath it, and refuses a `dir`
   *    annotation without it (omitted when `None`);
   *  - `annotations`: those of the action's annotations named in [[ForwardedAnnotations]], as one
   *    JSON object (omitted when none of them is there); the executor applies them under the
   *    operator's policy;
   *  - `limits`: see [[InitLimits]];
   *  - `env`: `baseEnv` (what a Docker runtime would have in its process environment, such as
   *    `__OW_API_HOST`) underneath the action's own variables, which win on a clash;
   *  - `kind`: the action's kind (`wasm:0.1`, `nodejs:20`, `python:3`, …): the executor runs
   *    `nodejs:*` and `python:*` code on its engines and anything else it knows as a WebAssembly module
   *    (omitted when `None`).
   * A namespace, annotations, limits or kind already in the initializer are replaced (or
   * removed), so nothing upstream of this call can set them.
   */
  def enrich(initializer: JsObject,
             namespace: Option[String],
             annotations: Option[JsObject],
             limits: InitLimits,
             baseEnv: Map[String, String] = Map.empty,
             kind: Option[String] = None): JsObject = {
    val actionEnv = initializer.fields.get("env") match {
      case Some(JsObject(env)) => env
      case _                   => Map.empty[String, JsValue]
    }
    val env = baseEnv.map { case (k, v) => k -> (JsString(v): JsValue) } ++ actionEnv
    val withEnv = if (env.nonEmpty) Map("env" -> JsObject(env)) else Map.empty[String, JsValue]
    val withNamespace = namespace.map(n => "namespace" -> JsString(n)).toMap
    val withAnnotations = annotations
      .map(a => JsObject(a.fields.filter { case (key, _) => ForwardedAnnotations.contains(key) }))
      .filter(_.fields.nonEmpty)
      .map(a => "annotations" -> a)
      .toMap
    val withLimits = if (limits.toJson.fields.nonEmpty) Map("limits" -> limits.toJson) else Map.empty
    val withKind = kind.map(k => "kind" -> JsString(k)).toMap
    JsObject(
      initializer.fields -- Seq("env", "namespace", "annotations", "limits", "kind") ++ withEnv ++ withNamespace ++
        withAnnotations ++ withLimits ++ withKind)
  }
}

/** The body of a /run request, as OpenWhisk's Container.run builds it. */
object RunBody {

  /**
   * The body with its `deadline` (epoch milliseconds, as OpenWhisk sends it: a string) moved
   * `waitedMillis` later. OpenWhisk fixes the deadline just before the first attempt, and the
   * executor ends the activation there; when the request is sent again after a 503, the time
   * waited is the platform's, not the action's. A body without a deadline, or with one that is
   * not a number, is left alone (the executor then applies the action's time limit).
   */
  def postponeDeadline(body: JsObject, waitedMillis: Long): JsObject =
    body.fields.get("deadline") match {
      case Some(JsString(d)) if waitedMillis > 0 && d.nonEmpty && d.forall(_.isDigit) =>
        JsObject(body.fields.updated("deadline", JsString((d.toLong + waitedMillis).toString)))
      case _ => body
    }
}

/**
 * Container ids in the executor: one path segment of `[A-Za-z0-9._-]`, at most 128 characters.
 * The invoker makes them itself (no round trip): OpenWhisk's container name, which starts with
 * the invoker's prefix (`wsk0_…`), made safe, plus a nonce of this factory instance so that a
 * restarted invoker never reuses the id of a container it left behind.
 */
object ContainerIds {
  val MaxLength = 128

  private def allowed(c: Char): Boolean =
    (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'

  def isValid(id: String): Boolean = id.nonEmpty && id.length <= MaxLength && id.forall(allowed)

  /** The executor id for an OpenWhisk container name. */
  def forName(name: String, nonce: String): String = {
    require(nonce.nonEmpty && nonce.forall(allowed), s"invalid nonce '$nonce'")
    val safe = name.map(c => if (allowed(c)) c else '_')
    val room = MaxLength - nonce.length - 1
    require(room > 0, "nonce too long")
    s"${safe.take(room)}-$nonce"
  }

  /**
   * The prefix that marks the containers of one invoker. Ids are `<prefix>_<count>_…`, so the
   * separator is part of the prefix: `wsk1` must not claim the containers of `wsk10`.
   */
  def ownedPrefix(invokerPrefix: String): String = invokerPrefix + "_"

  def isOwnedBy(id: String, invokerPrefix: String): Boolean = id.startsWith(ownedPrefix(invokerPrefix))
}

/** The body of an answer was cut: `actualBytes` were announced, only the first part was kept. */
final case class Truncation(actualBytes: Long, maxBytes: Long)

/** What came of one request to the executor. */
sealed trait ExecutorOutcome

object ExecutorOutcome {

  /**
   * The executor answered (any status but 503). Whose outcome it is, the action's or the
   * platform's, is decided by [[Attribution]].
   */
  final case class Answered(status: Int, body: String, truncated: Option[Truncation] = None) extends ExecutorOutcome {
    def ok: Boolean = status == 200 && truncated.isEmpty

    /** The `error` text of a JSON error body, if it has one. */
    def errorMessage: Option[String] =
      scala.util.Try(body.parseJson).toOption.collect {
        case JsObject(f) if f.contains("error") =>
          f("error") match {
            case JsString(s) => s
            case other       => other.compactPrint
          }
      }
  }

  /**
   * 503: the executor turned the request away before running anything. With `passes` (the
   * answer has `Retry-After`) it is busy for the moment and sending the request again soon may
   * succeed; without, it holds as many containers as it may, which lasts until one is destroyed.
   */
  final case class AtCapacity(body: String, passes: Boolean) extends ExecutorOutcome

  /** No connection could be made, or it broke before an answer: the executor is down or crashed. */
  final case class Unreachable(url: String, cause: Throwable) extends ExecutorOutcome {
    def message: String = s"The wasm executor at $url is unreachable: ${Unreachable.rootCause(cause)}"
  }

  object Unreachable {

    /** The innermost cause, e.g. "java.net.ConnectException: Connection refused", not the wrappers' noise. */
    def rootCause(t: Throwable): String = {
      var e = t
      var depth = 0
      while (e.getCause != null && (e.getCause ne e) && depth < 10) {
        e = e.getCause
        depth += 1
      }
      Option(e.getMessage).map(m => s"${e.getClass.getName}: $m").getOrElse(e.getClass.getName)
    }
  }

  /**
   * A /run for a container the executor does not hold: it answered 404, or the client knew
   * before asking, as the executor's instance changed (it restarted) since the container's
   * /init. Not the action's doing: OpenWhisk should run the activation on a new container.
   */
  final case class ContainerLost(reason: String) extends ExecutorOutcome

  /** No answer within the time limit of the request. */
  final case class TimedOut(after: FiniteDuration) extends ExecutorOutcome

  /** An answer without a usable body (e.g. no Content-Length), which OpenWhisk treats as no answer. */
  final case class NoResponse(reason: String) extends ExecutorOutcome
}

/** How an /init or /run ended, and when the attempt that ended it was sent (after any 503s). */
final case class Exchange(outcome: ExecutorOutcome, sent: java.time.Instant)

/** Thrown by the client when an operation other than init/run could not be done. */
final case class ExecutorRequestFailed(operation: String, outcome: ExecutorOutcome)
    extends RuntimeException(s"wasm executor: $operation failed: ${ExecutorRequestFailed.describe(outcome)}")

object ExecutorRequestFailed {
  def describe(outcome: ExecutorOutcome): String = outcome match {
    case a: ExecutorOutcome.Answered    => s"HTTP ${a.status}${a.errorMessage.map(": " + _).getOrElse("")}"
    case ExecutorOutcome.AtCapacity(b, _) => s"HTTP 503 $b"
    case u: ExecutorOutcome.Unreachable => u.message
    case ExecutorOutcome.ContainerLost(r) => r
    case ExecutorOutcome.TimedOut(d)    => s"no answer within $d"
    case ExecutorOutcome.NoResponse(r)  => r
  }
}
