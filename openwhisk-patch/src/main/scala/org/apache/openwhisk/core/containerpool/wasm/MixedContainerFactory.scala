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

// What this file is for: one invoker, two factories. The kinds the operator names run in the
// wasm-executor, every other kind (and every blackbox image) in the factory the invoker would
// otherwise use, Docker by default; so an operator can move one kind at a time. Selected with
// `whisk.spi.ContainerFactoryProvider = org.apache.openwhisk.core.containerpool.wasm.MixedContainerFactoryProvider`;
// configured under `whisk.mixed-container-factory` and, for the executor, `whisk.wasm-executor`.

package org.apache.openwhisk.core.containerpool.wasm

import org.apache.pekko.actor.ActorSystem
import org.apache.openwhisk.common.{Logging, TransactionId}
import org.apache.openwhisk.core.WhiskConfig
import org.apache.openwhisk.core.containerpool._
import org.apache.openwhisk.core.containerpool.wasm.client.KindRouting
import org.apache.openwhisk.core.entity.{ByteSize, ExecManifest, ExecutableWhiskAction, InvokerInstanceId}
import pureconfig._
import pureconfig.generic.auto._

import scala.concurrent.Future

/**
 * @param executorKinds  the manifest's kinds whose containers run in the executor
 * @param otherProvider  the ContainerFactoryProvider (a Scala object) for every other container
 */
final case class MixedContainerFactoryConfig(
  executorKinds: Set[String] = Set("wasm:0.1"),
  otherProvider: String = "org.apache.openwhisk.core.containerpool.docker.DockerContainerFactoryProvider")

/** Sends each container to `executor` or `other` by its image, as `routing` says. */
class MixedContainerFactory(executor: ContainerFactory, other: ContainerFactory, routing: KindRouting)
    extends ContainerFactory {

  private def factoryFor(image: ExecManifest.ImageName, userProvidedImage: Boolean): ContainerFactory =
    if (routing.toExecutor(KindRouting.imageKey(image.prefix, image.name), userProvidedImage)) executor else other

  override def createContainer(tid: TransactionId,
                               name: String,
                               actionImage: ExecManifest.ImageName,
                               userProvidedImage: Boolean,
                               memory: ByteSize,
                               cpuShares: Int,
                               cpuLimit: Option[Double],
                               action: Option[ExecutableWhiskAction])(implicit config: WhiskConfig,
                                                                      logging: Logging): Future[Container] =
    factoryFor(actionImage, userProvidedImage)
      .createContainer(tid, name, actionImage, userProvidedImage, memory, cpuShares, cpuLimit, action)

  override def createContainer(tid: TransactionId,
                               name: String,
                               actionImage: ExecManifest.ImageName,
                               userProvidedImage: Boolean,
                               memory: ByteSize,
                               cpuShares: Int,
                               cpuLimit: Option[Double])(implicit config: WhiskConfig,
                                                         logging: Logging): Future[Container] =
    createContainer(tid, name, actionImage, userProvidedImage, memory, cpuShares, cpuLimit, None)

  override def init(): Unit = {
    other.init()
    executor.init()
  }

  override def cleanup(): Unit = {
    other.cleanup()
    executor.cleanup()
  }
}

/** The SPI entry point; OpenWhisk's SpiLoader requires a Scala object. */
object MixedContainerFactoryProvider extends ContainerFactoryProvider {
  val ConfigKey = "whisk.mixed-container-factory"

  override def instance(actorSystem: ActorSystem,
                        logging: Logging,
                        config: WhiskConfig,
                        instanceId: InvokerInstanceId,
                        parameters: Map[String, Set[String]]): ContainerFactory = {
    val mixed = loadConfigOrThrow[MixedContainerFactoryConfig](ConfigKey)
    // The invoker reads the runtimes manifest before it makes its container factory.
    val manifest = ExecManifest.runtimesManifest.manifests.map {
      case (kind, runtime) => kind -> KindRouting.imageKey(runtime.image.prefix, runtime.image.name)
    }
    val routing = KindRouting.resolve(manifest, mixed.executorKinds) match {
      case Right(r)  => r
      case Left(why) => throw new IllegalArgumentException(s"$ConfigKey.executor-kinds: $why")
    }
    val other = Class
      .forName(mixed.otherProvider + "$")
      .getField("MODULE$")
      .get(null)
      .asInstanceOf[ContainerFactoryProvider]
    logging.info(
      this,
      s"kinds ${mixed.executorKinds.toSeq.sorted.mkString(", ")} (images ${routing.executorImages.toSeq.sorted
        .mkString(", ")}) run in the wasm executor, every other container through ${mixed.otherProvider}")(
      TransactionId.invoker)
    new MixedContainerFactory(
      WasmContainerFactoryProvider.instance(actorSystem, logging, config, instanceId, parameters),
      other.instance(actorSystem, logging, config, instanceId, parameters),
      routing)
  }
}
