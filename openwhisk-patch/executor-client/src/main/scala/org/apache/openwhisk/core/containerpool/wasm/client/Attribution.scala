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

// What this file is for: whose fault the end of an /init or /run is. Only the action's own
// outcome reaches its author as such; everything that went wrong in the platform becomes a
// system error with a fixed text (the details go to the invoker's log), or is handed back to
// OpenWhisk to run the activation elsewhere. Pure, so every case is unit-tested without
// OpenWhisk's classes; WasmContainer only turns a Verdict into OpenWhisk's types.

package org.apache.openwhisk.core.containerpool.wasm.client

/** What the invoker makes of one /init or /run. */
sealed trait Verdict

object Verdict {

  /** The action's own outcome: OpenWhisk reads the answer exactly as it reads a Docker runtime's. */
  final case class ActionsOwn(answer: ExecutorOutcome.Answered) extends Verdict

  /**
   * The platform failed: the activation ends as a system (whisk) error, which OpenWhisk counts
   * against the invoker's health. `userText` is what the user sees; `detail` goes only to the
   * invoker's log, as it may name internal addresses, ids and exception classes.
   */
  final case class SystemError(userText: String, detail: String) extends Verdict

  /**
   * OpenWhisk is to run the activation on another container (its ContainerHealthError): the
   * container is gone (the executor restarted), or the executor is busy and the scheduler can
   * place the activation elsewhere. `detail` is for the invoker's log.
   */
  final case class RunElsewhere(detail: String) extends Verdict
}

/**
 * One /init or /run as OpenWhisk makes it.
 *
 * @param route         `init` or `run`
 * @param reschedule    OpenWhisk's flag for a /run: whether it runs the activation elsewhere on a
 *                      ContainerHealthError (every /run on the scheduler path; on the ContainerPool
 *                      path only one on a container resumed from idle). At /init OpenWhisk passes
 *                      none: only the scheduler path reschedules there.
 * @param schedulerPath whether the invoker is the scheduler path's (FPCInvokerReactive), whose
 *                      reschedule returns the activation to the scheduler's queue, from which
 *                      another invoker may take it
 * @param maxConcurrent the action's concurrency: both paths re-run only the one activation that
 *                      met the health error and drop the others in flight on that container, so
 *                      an activation is sent elsewhere only from a container that runs one at a time
 */
final case class Call(route: String, reschedule: Boolean, schedulerPath: Boolean, maxConcurrent: Int) {

  /** Whether OpenWhisk would run this activation elsewhere, and lose none, on a health error. */
  def canRunElsewhere: Boolean =
    maxConcurrent <= 1 && (if (route == "init") schedulerPath else reschedule)

  /**
   * Whether a busy executor's 503 sends the activation elsewhere: only where the scheduler can
   * place it on another invoker. On the ContainerPool path it would come back to the same executor.
   */
  def busyGoesElsewhere: Boolean = schedulerPath && canRunElsewhere
}

object Attribution {

  /** The executor's /init refusals that OpenWhisk's own action proxies give (a developer error). */
  val InitRefusals: Set[String] = Set("Cannot initialize the action more than once.", "Missing main/no code to execute.")

  /** The user's text for a failure of the platform (the executor or the way to it). */
  val SystemFailureText: String = "The action could not be run because of a system error."

  /** The user's text when the executor stayed at capacity. */
  val AtCapacityText: String = "The action could not be run because the system is at capacity; please retry."

  /** The user's text when the container vanished (the executor restarted) and could not be replaced. */
  val ContainerLostText: String = "The action's container was lost because of a system error; please retry."

  /**
   * The verdict on how a request ended. See [[Call]] for when OpenWhisk can run an activation
   * elsewhere.
   */
  def verdict(call: Call, outcome: ExecutorOutcome): Verdict = {
    import ExecutorOutcome._
    import Verdict._
    val where = s"/${call.route}"
    outcome match {
      case a: Answered if a.status == 200 || a.status == 502 => ActionsOwn(a)
      case a: Answered if call.route == "init" && a.status == 403 && a.errorMessage.exists(InitRefusals) =>
        ActionsOwn(a)
      case a: Answered =>
        SystemError(SystemFailureText, s"the executor answered $where with HTTP ${a.status}: ${brief(a)}")
      case AtCapacity(body, _) =>
        val detail = s"the executor stayed at capacity for $where: $body"
        if (call.busyGoesElsewhere) RunElsewhere(detail) else SystemError(AtCapacityText, detail)
      case ExecutorOutcome.ContainerLost(reason) =>
        if (call.canRunElsewhere) RunElsewhere(reason) else SystemError(ContainerLostText, reason)
      // The executor is down: every container of the invoker is, so this is the invoker's
      // failure, and a system error is what makes OpenWhisk count it and take the invoker out
      // of rotation (a reschedule would not be counted). A restarted executor is ContainerLost.
      case u: Unreachable => SystemError(SystemFailureText, u.message)
      case TimedOut(after) =>
        SystemError(SystemFailureText, s"the executor did not answer $where within $after (it enforces the time limit itself)")
      case NoResponse(reason) => SystemError(SystemFailureText, s"no usable answer to $where: $reason")
    }
  }

  /**
   * Whether `invokerProvider` (OpenWhisk's `whisk.spi.InvokerProvider`) is the scheduler path's
   * invoker: FPCInvokerReactive, master's default; the standalone server runs InvokerReactive.
   */
  def isSchedulerPath(invokerProvider: String): Boolean =
    invokerProvider.trim.split('.').lastOption.contains("FPCInvokerReactive")

  private def brief(a: ExecutorOutcome.Answered): String = a.errorMessage.getOrElse(a.body.take(300))
}
