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

// What this file is for: the ContainerFactory SPI implementation that makes an OpenWhisk invoker
// run actions in a wasm-executor instead of Docker. Selected with
// `whisk.spi.ContainerFactoryProvider = org.apache.openwhisk.core.containerpool.wasm.WasmContainerFactoryProvider`;
// configured under `whisk.wasm-executor` (see WasmExecutorConfig for the keys and defaults).

package org.apache.openwhisk.core.containerpool.wasm

import java.net.URI

import org.apache.pekko.actor.ActorSystem
import com.typesafe.config.ConfigFactory
import org.apache.openwhisk.common.{Logging, TransactionId}
import org.apache.openwhisk.core.{ConfigKeys, WhiskConfig}
import org.apache.openwhisk.core.containerpool._
import org.apache.openwhisk.core.containerpool.wasm.client._
import org.apache.openwhisk.core.entity.{ByteSize, ExecManifest, ExecutableWhiskAction, InvokerInstanceId}
import pureconfig._
import pureconfig.generic.auto._

import scala.concurrent.{ExecutionContext, Future}
import scala.util.control.NonFatal

object WasmContainerFactory {
  val ConfigKey = "whisk.wasm-executor"

  /**
   * Reads `whisk.wasm-executor` with OpenWhisk's config mechanism (pureconfig over Typesafe
   * config: application.conf, -D properties, CONFIG_whisk_wasmExecutor_* variables). Missing
   * keys take the defaults of WasmExecutorConfig; a missing block means all defaults.
   */
  def loadExecutorConfig(): WasmExecutorConfig = {
    val config = ConfigFactory.load()
    if (config.hasPath(ConfigKey)) loadConfigOrThrow[WasmExecutorConfig](config, ConfigKey) else WasmExecutorConfig()
  }

  /** The invoker OpenWhisk runs (`whisk.spi.InvokerProvider`), e.g. `…invoker.FPCInvokerReactive`. */
  def invokerProvider(): String = {
    val config = ConfigFactory.load()
    if (config.hasPath(InvokerProviderKey)) config.getString(InvokerProviderKey) else ""
  }

  private val InvokerProviderKey = "whisk.spi.InvokerProvider"
}

/**
 * Creates WasmContainers. Creating one costs no request: the container id is made here from
 * OpenWhisk's container name, and the container comes to exist in the executor with its /init.
 */
class WasmContainerFactory(instance: InvokerInstanceId,
                           executorConfig: WasmExecutorConfig,
                           containerArgs: ContainerArgsConfig)(implicit actorSystem: ActorSystem, logging: Logging)
    extends ContainerFactory {

  implicit private val ec: ExecutionContext = actorSystem.dispatcher

  private val client = new ExecutorClient(executorConfig)
  private val admin = new ExecutorAdmin(executorConfig)

  /** Marks this invoker's containers in a shared executor (`wsk0`, then `_…`). */
  private val invokerPrefix = ContainerFactory.containerNamePrefix(instance)

  /** Differs between two starts of the same invoker, so a new container never meets an old id. */
  private val nonce = java.lang.Long.toString(System.currentTimeMillis(), 36)

  /** Whether this invoker is the scheduler path's, which can hand an activation to another invoker. */
  private val schedulerPath = Attribution.isSchedulerPath(WasmContainerFactory.invokerProvider())

  private val capacityRetry =
    WasmContainer.CapacityRetry(executorConfig.capacityRetryBeforeReschedule, executorConfig.capacityRetryFor)

  /** All containers share the executor's address; the container id selects the route. */
  private val executorAddress: ContainerAddress = {
    val uri = URI.create(executorConfig.baseUrl)
    ContainerAddress(uri.getHost, if (uri.getPort > 0) uri.getPort else 80)
  }

  override def createContainer(tid: TransactionId,
                               name: String,
                               actionImage: ExecManifest.ImageName,
                               userProvidedImage: Boolean,
                               memory: ByteSize,
                               cpuShares: Int,
                               cpuLimit: Option[Double],
                               action: Option[ExecutableWhiskAction])(implicit config: WhiskConfig,
                                                                      logging: Logging): Future[Container] = {
    val id = ContainerIds.forName(name, nonce)
    val baseEnv = Map("__OW_API_HOST" -> config.wskApiHost) ++ containerArgs.extraEnvVarMap
    Future.successful(
      new WasmContainer(
        ContainerId(id),
        executorAddress,
        client,
        memory,
        action,
        baseEnv,
        schedulerPath,
        capacityRetry))
  }

  override def createContainer(tid: TransactionId,
                               name: String,
                               actionImage: ExecManifest.ImageName,
                               userProvidedImage: Boolean,
                               memory: ByteSize,
                               cpuShares: Int,
                               cpuLimit: Option[Double])(implicit config: WhiskConfig,
                                                         logging: Logging): Future[Container] =
    createContainer(tid, name, actionImage, userProvidedImage, memory, cpuShares, cpuLimit, None)

  /** At invoker start: say which executor is used, and remove what an earlier run of this invoker left. */
  override def init(): Unit = {
    try {
      val health = admin.health()
      val path = if (schedulerPath) "the scheduler path" else "the ContainerPool path"
      logging.info(this, s"wasm executor at ${executorConfig.baseUrl}: ${health.compactPrint}; invoker on $path")(
        TransactionId.invoker)
    } catch {
      case NonFatal(t) =>
        // The invoker still starts: the executor may come up later, and every activation until
        // then fails with a clear "unreachable" error rather than a hang.
        logging.error(this, s"wasm executor not available at start: ${t.getMessage}")(TransactionId.invoker)
    }
    removeOwnContainers("start")
  }

  /** At invoker stop: remove every container of this invoker from the executor. */
  override def cleanup(): Unit = removeOwnContainers("stop")

  private def removeOwnContainers(when: String): Unit = {
    implicit val tid: TransactionId = TransactionId.invoker
    try {
      val report = admin.removeOwned(invokerPrefix)
      logging.info(
        this,
        s"removed ${report.removed.size} of ${report.found.size} wasm containers of $invokerPrefix at $when")
      report.failed.foreach { case (id, why) => logging.warn(this, s"could not remove wasm container $id: $why") }
    } catch {
      case NonFatal(t) => logging.error(this, s"could not remove wasm containers at $when: ${t.getMessage}")
    }
  }
}

/** The SPI entry point; OpenWhisk's SpiLoader requires a Scala object. */
object WasmContainerFactoryProvider extends ContainerFactoryProvider {
  override def instance(actorSystem: ActorSystem,
                        logging: Logging,
                        config: WhiskConfig,
                        instanceId: InvokerInstanceId,
                        parameters: Map[String, Set[String]]): ContainerFactory = {
    // `parameters` are `docker run` arguments (capabilities, ulimits, log driver): nothing to do here.
    new WasmContainerFactory(
      instanceId,
      WasmContainerFactory.loadExecutorConfig(),
      loadConfigOrThrow[ContainerArgsConfig](ConfigKeys.containerArgs))(actorSystem, logging)
  }
}
