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

// What this file is for: which containers of an invoker with two factories go to the executor.
// OpenWhisk tells a factory the image of the container it wants, always, but the action's kind
// only sometimes (never for a prewarmed container), so the kinds the operator names are
// resolved to their images once, at start, and containers are routed by image. Pure, so the
// checks of the operator's choice are unit-tested without OpenWhisk's classes.

package org.apache.openwhisk.core.containerpool.wasm.client

/** Routes containers by image: those of `executorImages` to the executor, the rest elsewhere. */
final case class KindRouting(executorImages: Set[String]) {

  /** Whether a container of `image` (see [[KindRouting.imageKey]]) runs in the executor. */
  def toExecutor(image: String, userProvidedImage: Boolean): Boolean =
    !userProvidedImage && executorImages.contains(image)
}

object KindRouting {

  /**
   * An image's identity for routing: prefix and name. The tag and registry are left out, as
   * OpenWhisk may override them per deployment without changing which runtime it is.
   */
  def imageKey(prefix: Option[String], name: String): String = prefix.filter(_.nonEmpty).fold(name)(p => s"$p/$name")

  /**
   * The routing for `executorKinds`, given every kind of the runtimes manifest with its image
   * key; or why the choice cannot work: a kind the manifest does not have, or an image that an
   * executor kind shares with a kind left to the other factory (a container of that image could
   * be either). Blackbox actions (user-provided images) always go to the other factory.
   */
  def resolve(manifest: Map[String, String], executorKinds: Set[String]): Either[String, KindRouting] = {
    val unknown = executorKinds.filterNot(manifest.contains)
    if (executorKinds.isEmpty) Left("no kinds are given to the executor")
    else if (unknown.nonEmpty)
      Left(s"the runtimes manifest has no kind ${unknown.toSeq.sorted.mkString(", ")}")
    else {
      val images = executorKinds.map(manifest)
      val shared = manifest.collect {
        case (kind, image) if images.contains(image) && !executorKinds.contains(kind) => kind -> image
      }
      if (shared.nonEmpty) {
        val which = shared.toSeq.sorted.map { case (k, i) => s"$k ($i)" }.mkString(", ")
        Left(s"kinds left to the other factory share an image with the executor's kinds: $which; give the executor's kinds images of their own")
      } else Right(KindRouting(images))
    }
  }
}
