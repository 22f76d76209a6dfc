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

// What this file is for: the routing of an invoker with two factories — which images go to the
// executor, and the operator's choices that are refused at start.

package org.apache.openwhisk.core.containerpool.wasm.client

import org.scalatest.flatspec.AnyFlatSpec
import org.scalatest.matchers.should.Matchers

class KindRoutingSpec extends AnyFlatSpec with Matchers {
  import KindRouting._

  private val manifest = Map(
    "wasm:0.1" -> imageKey(Some("openwhisk"), "action-wasm"),
    "nodejs:wasm" -> imageKey(Some("openwhisk"), "action-nodejs-wasm"),
    "nodejs:20" -> imageKey(Some("openwhisk"), "action-nodejs-v20"),
    "nodejs:default" -> imageKey(Some("openwhisk"), "action-nodejs-v20"),
    "python:3" -> imageKey(Some("openwhisk"), "action-python-v3.11"))

  behavior of "KindRouting"

  it should "send the named kinds' images to the executor and everything else to the other factory" in {
    val routing = resolve(manifest, Set("wasm:0.1", "nodejs:wasm")).toOption.get
    routing.toExecutor("openwhisk/action-wasm", userProvidedImage = false) shouldBe true
    routing.toExecutor("openwhisk/action-nodejs-wasm", userProvidedImage = false) shouldBe true
    routing.toExecutor("openwhisk/action-nodejs-v20", userProvidedImage = false) shouldBe false
    routing.toExecutor("openwhisk/action-python-v3.11", userProvidedImage = false) shouldBe false
    // A blackbox image goes to the other factory even when it is named like a managed one.
    routing.toExecutor("openwhisk/action-wasm", userProvidedImage = true) shouldBe false
  }

  it should "key images by prefix and name" in {
    imageKey(Some("openwhisk"), "action-wasm") shouldBe "openwhisk/action-wasm"
    imageKey(None, "action-wasm") shouldBe "action-wasm"
    imageKey(Some(""), "action-wasm") shouldBe "action-wasm"
  }

  it should "refuse kinds the manifest lacks, none at all, and images shared across the two factories" in {
    resolve(manifest, Set("wasm:0.1", "rust:1.0")) shouldBe Left("the runtimes manifest has no kind rust:1.0")
    resolve(manifest, Set.empty) shouldBe Left("no kinds are given to the executor")
    val shared = resolve(manifest, Set("nodejs:20"))
    shared.isLeft shouldBe true
    shared.left.toOption.get should include("nodejs:default (openwhisk/action-nodejs-v20)")
    // Both kinds of one image to the executor is fine.
    resolve(manifest, Set("nodejs:20", "nodejs:default")).map(_.executorImages) shouldBe Right(Set("openwhisk/action-nodejs-v20"))
  }
}
