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

// What this file is for: turning the executor's pending log lines of a container (docker
// json-file lines, each activation closed by a sentinel on stdout and on stderr) into the log
// lines of one activation, as OpenWhisk's `Container.logs(limit, waitForSentinel)` must deliver
// them: sentinels removed, at most `limit` bytes, a notice appended when lines were dropped or
// the end of the activation never showed up. Lines that belong to a later activation are kept
// for the next call, because the executor hands out every pending line only once.

package org.apache.openwhisk.core.containerpool.wasm.client

import java.nio.charset.StandardCharsets.UTF_8
import java.time.Instant

import spray.json._

import scala.util.Try

/** One log line in the docker json-file shape OpenWhisk's log stores read. */
final case class LogLine(time: String, stream: String, log: String) {
  def isSentinel: Boolean = log.stripLineEnd == ExecutorLogs.Sentinel

  def toJson: JsObject = JsObject("time" -> JsString(time), "stream" -> JsString(stream), "log" -> JsString(log))
}

object ExecutorLogs {

  /** Written by every OpenWhisk runtime (and by the executor) after each activation, on both streams. */
  val Sentinel = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX"

  /** OpenWhisk's text for dropped log lines (`Messages.truncateLogs`); its log stores look for it. */
  def truncationNotice(limitBytes: Long): String =
    s"Logs were truncated because the total bytes size exceeds the limit of $limitBytes bytes."

  /** OpenWhisk's text for incomplete log collection (`Messages.logFailure`). */
  val CollectionFailureNotice = "There was an issue while collecting your logs. Data might be missing."

  /**
   * Reads one line from the executor. A line that is not a json-file record is kept as stdout
   * text rather than lost: it is the action's output, whatever happened to its framing.
   */
  def parse(raw: String): LogLine =
    Try(raw.parseJson.asJsObject.fields).toOption
      .flatMap { f =>
        (f.get("log"), f.get("stream")) match {
          case (Some(JsString(log)), Some(JsString(stream))) =>
            val time = f.get("time").collect { case JsString(t) => t }.getOrElse(Instant.now.toString)
            Some(LogLine(time, stream, log))
          case _ => None
        }
      }
      .getOrElse(LogLine(Instant.now.toString, "stdout", raw))

  /** Bytes a line counts against the limit: the json-file record plus its newline, as for Docker. */
  def weight(raw: String): Long = raw.getBytes(UTF_8).length.toLong + 1
}

/**
 * The log lines of one activation, as collected.
 *
 * @param lines     the activation's lines in order, sentinels removed, within the limit
 * @param truncated lines were dropped because of the limit
 * @param complete  both sentinels were seen, or nobody asked to wait for them, or the container
 *                  is gone; false when the end never showed up or the executor could not be asked
 */
final case class ActivationLogs(lines: Vector[LogLine], truncated: Boolean, complete: Boolean) {

  /** The lines with OpenWhisk's notice appended when something is missing. */
  def withNotices(limitBytes: Long,
                  truncationNotice: Long => String = ExecutorLogs.truncationNotice,
                  failureNotice: String = ExecutorLogs.CollectionFailureNotice): Vector[LogLine] = {
    val now = Instant.now.toString
    if (truncated) lines :+ LogLine(now, "stderr", truncationNotice(limitBytes))
    else if (!complete) lines :+ LogLine(now, "stderr", failureNotice)
    else lines
  }
}

/**
 * Cuts one activation out of a sequence of raw lines. Feed lines with [[offer]] until it says
 * the activation is complete; the line that returned `false` and all after it belong to the
 * next activation.
 *
 * @param limitBytes bytes of log lines to keep (see [[ExecutorLogs.weight]])
 */
final class ActivationLogCut(limitBytes: Long) {
  private val kept = Vector.newBuilder[LogLine]
  private var used = 0L
  private var truncated = false
  private var sentinels = 0

  /** Both sentinels have been seen. */
  def done: Boolean = sentinels >= 2

  /** Takes `raw` if it still belongs to this activation; `false` once the activation is complete. */
  def offer(raw: String): Boolean = {
    if (done) false
    else {
      val line = ExecutorLogs.parse(raw)
      if (line.isSentinel) sentinels += 1
      else if (!truncated) {
        val w = ExecutorLogs.weight(raw)
        if (used + w <= limitBytes) {
          used += w
          kept += line
        } else truncated = true
      }
      true
    }
  }

  def result(complete: Boolean): ActivationLogs = ActivationLogs(kept.result(), truncated, complete || done)
}
