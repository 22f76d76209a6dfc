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

// What this file is for: blocking housekeeping against the executor — list its containers and
// remove those an invoker left behind. OpenWhisk calls ContainerFactory.init()/cleanup() at
// start and during shutdown and expects them to block; shutdown runs while the actor system is
// stopping, so this uses the JDK's own HTTP client instead of pekko-http.

package org.apache.openwhisk.core.containerpool.wasm.client

import java.net.URI
import java.net.http.{HttpClient, HttpRequest, HttpResponse}
import java.time.{Duration => JDuration}

import spray.json._

import scala.concurrent.duration._
import scala.util.Try
import scala.util.control.NonFatal

/**
 * @param found   containers of this invoker the executor listed
 * @param removed those destroyed
 * @param failed  ids that could not be destroyed, with the reason
 */
final case class CleanupReport(found: Seq[String], removed: Seq[String], failed: Seq[(String, String)])

final class ExecutorAdmin(config: WasmExecutorConfig) {
  private val http = HttpClient
    .newBuilder()
    .connectTimeout(JDuration.ofMillis(config.connectTimeout.toMillis))
    .version(HttpClient.Version.HTTP_1_1)
    .build()

  private def request(path: String, timeout: FiniteDuration) = {
    val builder = HttpRequest.newBuilder(URI.create(config.baseUrl + path)).timeout(JDuration.ofMillis(timeout.toMillis))
    config.authToken.foreach(t => builder.header("Authorization", s"Bearer $t"))
    builder
  }

  private def call(operation: String, req: HttpRequest): (Int, String) =
    try {
      val response = http.send(req, HttpResponse.BodyHandlers.ofString())
      (response.statusCode(), response.body())
    } catch {
      case NonFatal(t) if ExecutorClient.isConnectionFailure(t) =>
        throw ExecutorRequestFailed(operation, ExecutorOutcome.Unreachable(config.baseUrl, t))
      case NonFatal(t) =>
        throw ExecutorRequestFailed(operation, ExecutorOutcome.NoResponse(t.toString))
    }

  /** `GET /health`. Throws [[ExecutorRequestFailed]] when the executor cannot be asked. */
  def health(): JsObject = {
    val (status, body) = call("health", request("/health", config.controlTimeout).GET().build())
    if (status != 200) throw ExecutorRequestFailed("health", ExecutorOutcome.Answered(status, body))
    body.parseJson.asJsObject
  }

  /** `GET /containers`: every container id the executor holds. */
  def containers(): Seq[String] = {
    val (status, body) = call("list containers", request("/containers", config.controlTimeout).GET().build())
    if (status != 200) throw ExecutorRequestFailed("list containers", ExecutorOutcome.Answered(status, body))
    Try(body.parseJson.asJsObject.fields("containers")).toOption match {
      case Some(JsArray(ids)) => ids.collect { case JsString(id) => id }
      case _ =>
        throw ExecutorRequestFailed("list containers", ExecutorOutcome.NoResponse(s"unexpected answer: $body"))
    }
  }

  /** `POST /{id}/destroy`; true if the container is gone afterwards (404 included). */
  def destroy(id: String): Boolean = {
    require(ContainerIds.isValid(id), s"invalid container id '$id'")
    val req = request(s"/$id/destroy", config.controlTimeout).POST(HttpRequest.BodyPublishers.noBody()).build()
    val (status, _) = call(s"destroy $id", req)
    status == 200 || status == 404
  }

  /**
   * Destroys every container whose id marks it as created by the invoker with this prefix
   * (see [[ContainerIds]]), within `cleanupTimeout` overall. Other invokers' containers, which
   * share the executor, are left alone.
   */
  def removeOwned(invokerPrefix: String): CleanupReport = {
    val deadline = config.cleanupTimeout.fromNow
    val owned = containers().filter(ContainerIds.isOwnedBy(_, invokerPrefix))
    val results = owned.map { id =>
      if (deadline.isOverdue()) id -> Some("cleanup time limit reached")
      else
        id -> (try {
          if (destroy(id)) None else Some("executor refused")
        } catch {
          case NonFatal(t) => Some(t.getMessage)
        })
    }
    CleanupReport(owned, results.collect { case (id, None) => id }, results.collect { case (id, Some(why)) => id -> why })
  }
}
