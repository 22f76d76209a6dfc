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

// What this file is for: test fixtures. Starts the real wasm-executor binary once per test run
// on a free loopback port (binary from WASM_EXECUTOR_BIN, default <repo>/target/release, then
// target/debug), waits for GET /health, and loads the Wasm actions the tests deploy (from
// WASM_ACTIONS_DIR, default <repo>/actions/dist). A missing binary or action fails the tests
// with a message saying what to build; nothing is skipped silently.

package org.apache.openwhisk.core.containerpool.wasm.client

import java.io.ByteArrayOutputStream
import java.net.{HttpURLConnection, ServerSocket, URL}
import java.nio.file.{Files, Path, Paths}
import java.util.Base64
import java.util.zip.{ZipEntry, ZipOutputStream}

import scala.concurrent.duration._
import scala.jdk.CollectionConverters._
import scala.util.Try

object TestExecutor {

  val repoRoot: Path =
    Paths.get(sys.props.getOrElse("wasm.repo.root", sys.env.getOrElse("WASM_REPO_ROOT", "../.."))).toAbsolutePath.normalize

  lazy val binary: Path = sys.env.get("WASM_EXECUTOR_BIN").filter(_.nonEmpty) match {
    case Some(p) =>
      val path = Paths.get(p)
      require(Files.isExecutable(path), s"WASM_EXECUTOR_BIN=$p is not an executable file")
      path
    case None =>
      val candidates = Seq("release", "debug").map(p => repoRoot.resolve(s"target/$p/wasm-executor-wasmtime"))
      candidates.find(Files.isExecutable(_)).getOrElse {
        throw new IllegalStateException(
          s"no wasm-executor binary: tried ${candidates.mkString(", ")}; build it with " +
            "`cargo build --release -p wasm-executor-wasmtime` or set WASM_EXECUTOR_BIN")
      }
  }

  lazy val actionsDir: Path =
    sys.env.get("WASM_ACTIONS_DIR").filter(_.nonEmpty).map(Paths.get(_)).getOrElse(repoRoot.resolve("actions/dist"))

  /** The bytes of `<actionsDir>/<name>.wasm`. */
  def module(name: String): Array[Byte] = {
    val file = actionsDir.resolve(s"$name.wasm")
    require(Files.isRegularFile(file), s"missing Wasm action $file; build the actions (actions/) or set WASM_ACTIONS_DIR")
    Files.readAllBytes(file)
  }

  def base64(bytes: Array[Byte]): String = Base64.getEncoder.encodeToString(bytes)

  /** A zip holding one entry, as `wsk action create … file.zip` uploads it. */
  def zip(entryName: String, bytes: Array[Byte]): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    val z = new ZipOutputStream(out)
    z.putNextEntry(new ZipEntry(entryName))
    z.write(bytes)
    z.closeEntry()
    z.close()
    out.toByteArray
  }

  def freePort(): Int = {
    val s = new ServerSocket(0)
    try s.getLocalPort
    finally s.close()
  }

  /** A running executor process; `url` is its base URL. */
  final class Running(val process: Process, val url: String, val logFile: Path, val cacheDir: Path) {
    def stop(): Unit = {
      process.destroy()
      if (!process.waitFor(5, java.util.concurrent.TimeUnit.SECONDS)) process.destroyForcibly()
      Try(deleteTree(cacheDir))
    }
    def log: String = Try(new String(Files.readAllBytes(logFile), "UTF-8")).getOrElse("")

    /** `path` as the executor sees it, through its root: in its own mount namespace each
     *  namespace's grants are a filesystem of their own (quotas). */
    def seen(path: Path): Path = Paths.get(s"/proc/${process.pid()}/root").resolve(path.toString.stripPrefix("/"))
  }

  /** Removes `p` and everything beneath it (nothing if it does not exist). */
  def deleteTree(p: Path): Unit =
    if (Files.exists(p)) Files.walk(p).iterator().asScala.toSeq.reverse.foreach(Files.deleteIfExists)

  /**
   * Starts an executor with `extraArgs` (added to `--listen` on `port` and a private `--state-dir`) and
   * waits until it answers /health.
   */
  def start(extraArgs: Seq[String] = Seq.empty,
            startTimeout: FiniteDuration = 60.seconds,
            port: Int = freePort()): Running = {
    val cacheDir = Files.createTempDirectory("wasm-executor-state")
    val targetDir = Paths.get("target").toAbsolutePath
    Files.createDirectories(targetDir)
    val logFile = Files.createTempFile(targetDir, "executor-", ".log")
    val cmd = Seq(binary.toString, "--listen", s"127.0.0.1:$port", "--state-dir", cacheDir.toString) ++ extraArgs
    val process = new ProcessBuilder(cmd: _*)
      .redirectErrorStream(true)
      .redirectOutput(logFile.toFile)
      .start()
    val running = new Running(process, s"http://127.0.0.1:$port", logFile, cacheDir)
    val deadline = startTimeout.fromNow
    while (!healthy(running.url)) {
      if (!process.isAlive) {
        throw new IllegalStateException(s"executor exited at start (${cmd.mkString(" ")}):\n${running.log}")
      }
      if (deadline.isOverdue()) {
        running.stop()
        throw new IllegalStateException(s"executor did not answer /health within $startTimeout:\n${running.log}")
      }
      Thread.sleep(50)
    }
    running
  }

  def healthy(url: String): Boolean =
    Try {
      val c = new URL(url + "/health").openConnection().asInstanceOf[HttpURLConnection]
      c.setConnectTimeout(500)
      c.setReadTimeout(2000)
      try c.getResponseCode == 200
      finally c.disconnect()
    }.getOrElse(false)

  /** The executor shared by the suites of one test run, stopped when the JVM exits. */
  lazy val shared: Running = {
    val r = start()
    sys.addShutdownHook(r.stop())
    r
  }

  /** `--help` of the binary, to see which optional flags it has. */
  lazy val help: String = Try {
    val p = new ProcessBuilder(binary.toString, "--help").redirectErrorStream(true).start()
    val text = new String(p.getInputStream.readAllBytes(), "UTF-8")
    p.waitFor()
    text
  }.getOrElse("")
}
