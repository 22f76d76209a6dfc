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

// What this file is for: the invoker's asynchronous HTTP client for one wasm-executor process.
// It posts /init and /run bodies for a container id, destroys containers and drains their
// logs, and reduces every way a request can end to one ExecutorOutcome. The OpenWhisk adapter
// (WasmContainer) maps those outcomes onto OpenWhisk's own types.

package org.apache.openwhisk.core.containerpool.wasm.client

import java.io.IOException
import java.time.Instant
import java.util.concurrent.atomic.{AtomicBoolean, AtomicReference}

import org.apache.pekko.actor.ActorSystem
import org.apache.pekko.http.scaladsl.Http
import org.apache.pekko.http.scaladsl.model._
import org.apache.pekko.http.scaladsl.model.headers.{Accept, Authorization, OAuth2BearerToken}
import org.apache.pekko.http.scaladsl.settings.{ClientConnectionSettings, ConnectionPoolSettings}
import org.apache.pekko.stream.StreamTcpException
import org.apache.pekko.stream.scaladsl.{Framing, Sink}
import org.apache.pekko.util.ByteString
import spray.json._

import scala.concurrent.duration._
import scala.concurrent.{ExecutionContext, Future, Promise}
import scala.util.control.NonFatal

final class ExecutorClient(val config: WasmExecutorConfig)(implicit system: ActorSystem) {
  import ExecutorOutcome._

  implicit private val ec: ExecutionContext = system.dispatcher

  /**
   * One pool of keep-alive connections to the executor, shared by all containers. Unlike
   * OpenWhisk's per-container clients (a fresh connection per request), pooling matters here:
   * every activation of the invoker goes to one address, and a new TCP connection per request
   * would leave a TIME_WAIT socket per activation behind.
   */
  private val poolSettings: ConnectionPoolSettings = {
    val connection = ClientConnectionSettings(system)
      .withConnectingTimeout(config.connectTimeout)
      // While a request is in flight nothing moves on the connection until the action ends,
      // so this idle limit must exceed the longest action; our own timeout below is the real bound.
      .withIdleTimeout(config.maxRequestTime)
    ConnectionPoolSettings(system)
      .withConnectionSettings(connection)
      .withMaxConnections(config.maxConnections)
      .withMaxOpenRequests(config.maxOpenRequests)
      // /init and /run are not idempotent: never send one twice.
      .withMaxRetries(0)
      .withKeepAliveTimeout(config.keepAliveTimeout)
      // After failed connection attempts the pool waits before trying again, doubling the wait
      // up to this bound (default: 2 minutes). Queued requests wait too, so a restarted executor
      // would stay unused, and every activation meanwhile would time out instead of failing
      // fast with "unreachable". The executor is local; retry soon.
      .withBaseConnectionBackoff(10.millis)
      .withMaxConnectionBackoff(200.millis)
  }

  private val jsonAccept = Accept(MediaTypes.`application/json`)

  /** The instance id of the executor's latest answer; it changes when the executor restarts. */
  private val latestInstance = new AtomicReference[Option[String]](None)

  /**
   * The instance of the executor process that answered last (its `wasm-executor-instance`
   * header), None before the first answer. Containers are held in that process's memory: a
   * container initialized by another instance is gone.
   */
  def instance: Option[String] = latestInstance.get

  private def noteInstance(response: HttpResponse): Unit =
    response.headers.find(_.is(ExecutorClient.InstanceHeader)).foreach(h => latestInstance.set(Some(h.value)))

  /**
   * Why container `id`, initialized by executor instance `initializedBy`, is known to be gone
   * without asking: the executor answered since then as another instance.
   */
  def knownLost(id: String, initializedBy: Option[String]): Option[String] =
    for {
      before <- initializedBy
      now <- instance if now != before
    } yield s"the wasm executor restarted since container $id was initialized (instance $before, now $now), so the container is gone"

  /** Every request carries the executor's token when one is configured. */
  private val authorization: List[HttpHeader] =
    config.authToken.map(t => Authorization(OAuth2BearerToken(t))).toList

  /** Unbounded answers are not expected from /init; this keeps a broken executor from filling memory. */
  val MaxControlResponseBytes: Long = 1024L * 1024L

  private def url(id: String, action: String): Uri = {
    require(ContainerIds.isValid(id), s"invalid container id '$id'")
    Uri(s"${config.baseUrl}/$id/$action")
  }

  /**
   * POSTs `body` to `/{id}/{action}` (`init` or `run`) and waits at most `timeout` plus the
   * configured slack. An answer longer than `maxResponseBytes` is cut to `truncationBytes`.
   *
   * While the executor answers 503 with `Retry-After` (busy for the moment), the request is sent
   * again with growing pauses for up to `capacityRetryFor`: the executor turns a request away
   * before running anything, so sending it again is safe. A /run sent again has its `deadline`
   * moved by the time waited (see [[RunBody.postponeDeadline]]), and each attempt gets the whole
   * `timeout`: the waiting is not charged to the action. A 503 without `Retry-After` (no room for another container) is
   * returned at once, as is the last 503 when the time is up.
   *
   * A /run of a container the executor does not hold (404), or of one initialized by an
   * executor instance that has since been replaced (`initializedBy`, not sent at all), is
   * ContainerLost.
   */
  def exchange(id: String,
               action: String,
               body: JsObject,
               timeout: FiniteDuration,
               maxResponseBytes: Long,
               truncationBytes: Long,
               capacityRetryFor: FiniteDuration = Duration.Zero,
               initializedBy: Option[String] = None): Future[Exchange] = {
    val isRun = action == "run"
    val target = url(id, action)
    val retryUntil = capacityRetryFor.fromNow
    val first = Instant.now

    def attempt(pause: FiniteDuration): Future[Exchange] = {
      val sent = Instant.now
      val payload = if (isRun) RunBody.postponeDeadline(body, sent.toEpochMilli - first.toEpochMilli) else body
      val entity = HttpEntity(ContentTypes.`application/json`, payload.compactPrint)
      val request = HttpRequest(HttpMethods.POST, target, headers = jsonAccept :: authorization, entity = entity)
      send(request, timeout + config.requestSlack, maxResponseBytes, truncationBytes).flatMap {
        case AtCapacity(_, true) if retryUntil.timeLeft > pause =>
          org.apache.pekko.pattern.after(pause)(attempt((pause * 2) min ExecutorClient.MaxCapacityPause))
        case a: Answered if isRun && a.status == StatusCodes.NotFound.intValue =>
          val why = knownLost(id, initializedBy).getOrElse(
            s"the wasm executor does not hold container $id (${a.errorMessage.getOrElse("HTTP 404")})")
          Future.successful(Exchange(ContainerLost(why), sent))
        case outcome => Future.successful(Exchange(outcome, sent))
      }
    }
    (if (isRun) knownLost(id, initializedBy) else None) match {
      case Some(reason) => Future.successful(Exchange(ContainerLost(reason), Instant.now))
      case None         => attempt(ExecutorClient.FirstCapacityPause)
    }
  }

  /** [[exchange]], for callers that need only the outcome. */
  def post(id: String,
           action: String,
           body: JsObject,
           timeout: FiniteDuration,
           maxResponseBytes: Long,
           truncationBytes: Long,
           capacityRetryFor: FiniteDuration = Duration.Zero,
           initializedBy: Option[String] = None): Future[ExecutorOutcome] =
    exchange(id, action, body, timeout, maxResponseBytes, truncationBytes, capacityRetryFor, initializedBy)
      .map(_.outcome)

  /** `POST /{id}/init` with `{"value": value}`. */
  def init(id: String, value: JsObject, timeout: FiniteDuration): Future[ExecutorOutcome] =
    post(id, "init", JsObject("value" -> value), timeout, MaxControlResponseBytes, MaxControlResponseBytes)

  /** `POST /{id}/run` with OpenWhisk's run body (`value` plus the activation's context fields). */
  def run(id: String,
          body: JsObject,
          timeout: FiniteDuration,
          maxResponseBytes: Long,
          truncationBytes: Long,
          capacityRetryFor: FiniteDuration = Duration.Zero,
          initializedBy: Option[String] = None): Future[ExecutorOutcome] =
    post(id, "run", body, timeout, maxResponseBytes, truncationBytes, capacityRetryFor, initializedBy)

  /** `POST /{id}/destroy`; an unknown container (404) counts as destroyed. */
  def destroy(id: String): Future[Unit] = {
    val request = HttpRequest(HttpMethods.POST, url(id, "destroy"), headers = jsonAccept :: authorization)
    send(request, config.controlTimeout, MaxControlResponseBytes, MaxControlResponseBytes).flatMap {
      case a: Answered if a.status == 200 || a.status == 404 => Future.successful(())
      case other                                             => Future.failed(ExecutorRequestFailed(s"destroy $id", other))
    }
  }

  /**
   * `GET /{id}/logs`: the container's pending raw log lines, which the executor then forgets.
   * Left(Answered(404, …)) means the container is unknown (already gone).
   */
  def pendingLogLines(id: String): Future[Either[ExecutorOutcome, Vector[String]]] = {
    val request = HttpRequest(HttpMethods.GET, url(id, "logs"), headers = authorization)
    val lines: Future[Either[ExecutorOutcome, Vector[String]]] = Http()
      .singleRequest(request, settings = poolSettings)
      .flatMap { response =>
        noteInstance(response)
        if (response.status == StatusCodes.OK) {
          response.entity.withoutSizeLimit.dataBytes
            .via(Framing.delimiter(ByteString("\n"), config.maxLogLineBytes, allowTruncation = true))
            .map(_.utf8String)
            .filter(_.nonEmpty)
            .runWith(Sink.seq)
            .map(l => Right(l.toVector))
        } else {
          readAnswer(response, MaxControlResponseBytes, MaxControlResponseBytes).map(Left(_))
        }
      }
      .recover { case NonFatal(t) => Left(failure(t)) }
    withTimeout[Either[ExecutorOutcome, Vector[String]]](
      lines,
      config.controlTimeout,
      Left(TimedOut(config.controlTimeout)))
  }

  /** `GET /health`: the executor's description of itself. */
  def health(): Future[JsObject] = {
    val request = HttpRequest(HttpMethods.GET, Uri(s"${config.baseUrl}/health"), headers = jsonAccept :: authorization)
    send(request, config.controlTimeout, MaxControlResponseBytes, MaxControlResponseBytes).flatMap {
      case a: Answered if a.ok => Future.fromTry(scala.util.Try(a.body.parseJson.asJsObject))
      case other               => Future.failed(ExecutorRequestFailed("health", other))
    }
  }

  /** A reader that hands out the logs of one container activation by activation. */
  def logReader(id: String): ContainerLogReader = new ContainerLogReader(id, this)

  private def send(request: HttpRequest,
                   timeout: FiniteDuration,
                   maxResponseBytes: Long,
                   truncationBytes: Long): Future[ExecutorOutcome] = {
    val answer = Http()
      .singleRequest(request, settings = poolSettings)
      .flatMap(readAnswer(_, maxResponseBytes, truncationBytes))
      .recover { case NonFatal(t) => failure(t) }
    withTimeout(answer, timeout, TimedOut(timeout))
  }

  /** Mirrors OpenWhisk's container clients: no Content-Length (or 204) counts as no answer. */
  private def readAnswer(response: HttpResponse, maxResponseBytes: Long, truncationBytes: Long): Future[ExecutorOutcome] = {
    noteInstance(response)
    val retryAfter = response.headers.exists(_.is("retry-after"))
    val entity = response.entity.withoutSizeLimit
    entity.contentLengthOption match {
      case Some(length) if response.status != StatusCodes.NoContent =>
        if (length <= maxResponseBytes) {
          entity.dataBytes.runFold(ByteString.empty)(_ ++ _).map { bytes =>
            classify(response.status.intValue, bytes.utf8String, None, retryAfter)
          }
        } else {
          // Keep the first `truncationBytes`, but read to the end so the connection stays usable.
          entity.dataBytes
            .runFold(ByteString.empty)((kept, chunk) => if (kept.size >= truncationBytes) kept else kept ++ chunk)
            .map { bytes =>
              val cut = bytes.take(truncationBytes.toInt).utf8String
              classify(response.status.intValue, cut, Some(Truncation(length, maxResponseBytes)), retryAfter)
            }
        }
      case _ =>
        entity.dataBytes.runWith(Sink.ignore).map { _ =>
          NoResponse(s"answer ${response.status.intValue} without Content-Length")
        }
    }
  }

  private def classify(status: Int, body: String, truncated: Option[Truncation], retryAfter: Boolean): ExecutorOutcome =
    if (status == StatusCodes.ServiceUnavailable.intValue) AtCapacity(body, retryAfter)
    else Answered(status, body, truncated)

  /** Connection failures become Unreachable; anything else that broke the exchange, NoResponse. */
  private def failure(t: Throwable): ExecutorOutcome =
    if (ExecutorClient.isConnectionFailure(t)) Unreachable(config.baseUrl, t)
    else NoResponse(s"exchange with the executor failed: $t")

  private def withTimeout[T](f: Future[T], timeout: FiniteDuration, onTimeout: => T): Future[T] = {
    val result = Promise[T]()
    val settled = new AtomicBoolean(false)
    val timer = system.scheduler.scheduleOnce(timeout) {
      if (settled.compareAndSet(false, true)) result.success(onTimeout)
    }
    f.onComplete { r =>
      if (settled.compareAndSet(false, true)) {
        timer.cancel()
        result.complete(r)
      }
    }
    result.future
  }
}

object ExecutorClient {

  /** The header naming the executor process that answered (also `instance` in `GET /health`). */
  val InstanceHeader: String = "wasm-executor-instance"

  /** Pauses between sends while the executor is at capacity: short at first, as slots free up fast. */
  val FirstCapacityPause: FiniteDuration = 25.millis
  val MaxCapacityPause: FiniteDuration = 1.second

  /**
   * True for failures that mean "no executor there" or "it went away mid-request": refused or
   * reset connections, and pekko-http's report of a connection closed before the answer.
   */
  def isConnectionFailure(t: Throwable): Boolean = {
    // Walks the cause chain (bounded: chains can be cyclic). Written without LazyList so that
    // it compiles on Scala 2.12 too, which OpenWhisk master builds by default.
    var e = t
    var depth = 0
    var found = false
    while (e != null && depth < 10 && !found) {
      found = e match {
        case _: StreamTcpException => true
        case _: IOException        => true
        case other                 => other.getClass.getName.contains("UnexpectedConnectionClosure")
      }
      e = e.getCause
      depth += 1
    }
    found
  }
}

/**
 * Hands out the logs of one container, one activation per call to [[collect]]. The executor
 * forgets lines once it has sent them, so lines read past the end of the current activation
 * are kept here for the next call.
 */
final class ContainerLogReader(id: String, client: ExecutorClient)(implicit system: ActorSystem) {
  implicit private val ec: ExecutionContext = system.dispatcher

  // Lines already fetched that belong to later activations; guarded by `this`.
  private var pending: Vector[String] = Vector.empty

  /**
   * The next activation's logs: at most `limitBytes`, sentinels removed. With
   * `waitForSentinel`, asks the executor again (every `logPollInterval`, for at most `logWait`)
   * until both sentinels of the activation are seen; otherwise takes what is there now.
   */
  def collect(limitBytes: Long, waitForSentinel: Boolean): Future[ActivationLogs] = {
    val cut = new ActivationLogCut(limitBytes)
    val deadline = config.logWait.fromNow

    def feed(lines: Vector[String]): Unit = {
      val rest = lines.dropWhile(cut.offer)
      this.synchronized { pending = rest ++ pending }
    }

    def round(): Future[ActivationLogs] =
      client.pendingLogLines(id).flatMap {
        case Right(lines) =>
          feed(lines)
          if (cut.done || !waitForSentinel) Future.successful(cut.result(complete = true))
          else if (deadline.isOverdue()) Future.successful(cut.result(complete = false))
          else org.apache.pekko.pattern.after(config.logPollInterval)(round())
        case Left(ExecutorOutcome.Answered(404, _, _)) =>
          // The container is gone, so nothing more will come.
          Future.successful(cut.result(complete = true))
        case Left(_) =>
          Future.successful(cut.result(complete = false))
      }

    val earlier = this.synchronized {
      val p = pending
      pending = Vector.empty
      p
    }
    feed(earlier)
    if (cut.done) Future.successful(cut.result(complete = true)) else round()
  }

  private def config = client.config
}
