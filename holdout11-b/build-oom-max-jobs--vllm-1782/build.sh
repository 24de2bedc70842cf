#!/bin/sh
set -e
imageNAME="xxxxxxxx"
git clone https://github.com/vllm-project/vllm.git && \
cd vllm/

# Build Classic
DOCKER_BUILDKIT=1 docker build . --progress=plain --target vllm --tag $imageNAME:latest --build-arg max_jobs=8
# Broadcast image name and tag
echo "$imageNAME"
