#!/bin/sh
# Licensed to the Apache Software Foundation (ASF) under one or more contributor
# license agreements; and to You under the Apache License, Version 2.0.
#
# Stands in for the docker CLI when the OpenWhisk standalone server runs its actions in a
# wasm-executor on a machine without Docker. The standalone server still creates a docker
# client at start: it asks for the client version and lists and removes the "whisk-" service
# containers it may have left behind. Those calls are answered here ("none"); every other use
# of docker fails with a message. Point the server at this file with
#   -Dwhisk.docker.executable=/path/to/docker-stub.sh
# (it is only consulted when /usr/bin/docker and /usr/local/bin/docker do not exist).
case "$1" in
  version)   echo "0.0.0-wasm-stub" ;;
  --version) echo "Docker version 0.0.0-wasm-stub" ;;
  info|ps|rm) ;;
  *)
    echo "docker-stub: 'docker $*' is not available; this OpenWhisk runs actions in a wasm-executor" >&2
    exit 1
    ;;
esac
