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

// What this file is for: the settings of the invoker's connection to a wasm-executor. Inside
// OpenWhisk they are read from `whisk.wasm-executor` (see WasmContainerFactory); every field has
// a default so that an empty block is a valid configuration.

package org.apache.openwhisk.core.containerpool.wasm.client

import scala.concurrent.duration._

/**
 * @param url                 base URL of the executor, e.g. `http://127.0.0.1:9000`
 * @param connectTimeout      TCP connect timeout for every request
 * @param requestSlack        added to the action time limit when waiting for /init and /run: the
 *                            executor enforces the limit itself and answers with an error, so
 *                            the invoker should normally hear that answer rather than give up first
 * @param controlTimeout      time limit for /destroy, /logs, /containers and /health
 * @param maxConnections      pooled connections to the executor (one per request in flight;
 *                            HTTP/1.1 has no pipelining here), so at least the invoker's
 *                            concurrent activations
 * @param maxOpenRequests     requests queued for a connection; a power of two
 * @param keepAliveTimeout    an idle pooled connection is closed after this; it must stay below
 *                            the executor's own idle limit so that a request never races the
 *                            executor closing the connection
 * @param maxRequestTime      idle limit of a connection while a request is in flight; longer than
 *                            any action time limit
 * @param logWait             how long `logs(waitForSentinel = true)` keeps asking for the end of
 *                            an activation's logs before it reports missing data
 * @param logPollInterval     pause between two such asks
 * @param maxLogLineBytes     longest single log line accepted from the executor
 * @param cleanupTimeout      overall bound for removing leftover containers at start and stop
 * @param capacityRetryFor    how long the invoker sends /init or /run again, with growing pauses,
 *                            while the executor answers 503 "at capacity" with `Retry-After`,
 *                            where OpenWhisk cannot send the activation elsewhere (the
 *                            ContainerPool path, whose reschedule would come back to the same
 *                            executor, and actions with concurrency above 1); then the
 *                            activation ends as a system error. The waiting is not charged to
 *                            the action: each attempt gets the action's whole time limit.
 * @param capacityRetryBeforeReschedule the same where the scheduler path can send the activation
 *                            back to its queue, from which another invoker can take it: a short wait
 * @param authTokenFile       file holding the executor's bearer token (its --auth-token-file);
 *                            sent as `Authorization: Bearer …` with every request. Unset: none
 *                            is sent, for an executor without a token.
 */
final case class WasmExecutorConfig(url: String = "http://127.0.0.1:9000",
                                    connectTimeout: FiniteDuration = 2.seconds,
                                    requestSlack: FiniteDuration = 2.seconds,
                                    controlTimeout: FiniteDuration = 10.seconds,
                                    maxConnections: Int = 512,
                                    maxOpenRequests: Int = 1024,
                                    keepAliveTimeout: FiniteDuration = 5.seconds,
                                    maxRequestTime: FiniteDuration = 15.minutes,
                                    logWait: FiniteDuration = 2.seconds,
                                    logPollInterval: FiniteDuration = 20.milliseconds,
                                    maxLogLineBytes: Int = 16 * 1024 * 1024,
                                    cleanupTimeout: FiniteDuration = 30.seconds,
                                    capacityRetryFor: FiniteDuration = 30.seconds,
                                    capacityRetryBeforeReschedule: FiniteDuration = 1.second,
                                    authTokenFile: Option[String] = None) {
  require(url.startsWith("http://"), s"whisk.wasm-executor.url must be an http:// URL, got '$url'")
  require(maxConnections > 0, "whisk.wasm-executor.max-connections must be > 0")
  require(
    maxOpenRequests > 0 && Integer.bitCount(maxOpenRequests) == 1,
    "whisk.wasm-executor.max-open-requests must be a power of two")

  /** The base URL without a trailing slash. */
  val baseUrl: String = url.stripSuffix("/")

  /** The bearer token, read once when the configuration is loaded. */
  val authToken: Option[String] = authTokenFile.map { file =>
    val token = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get(file)), "UTF-8").trim
    require(token.nonEmpty, s"whisk.wasm-executor.auth-token-file $file is empty")
    token
  }
}
