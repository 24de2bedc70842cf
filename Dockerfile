# The diagnose image: `diagnose` is the entry point.
#
#   docker build -t gpu-diagnose .
#   docker run --rm -i gpu-diagnose < crash.log                              # a log on stdin
#   docker run --rm -v "$PWD:/work:ro" gpu-diagnose server.log dmesg.txt     # files of this directory
#   docker run --rm --gpus all --user root --cap-add SYSLOG -v "$PWD:/out" \
#       gpu-diagnose collect -o /out/bundle.tar.gz                           # this GPU host's artifacts
#   docker run --rm -e SLACK_BOT_TOKEN -e SLACK_APP_TOKEN \
#       -v diagnose-state:/home/diagnose/.local/state/diagnose gpu-diagnose slack     # the Slack app
#   docker run --rm -p 8080:8080 -e DIAGNOSE_API_TOKEN -e SLACK_SIGNING_SECRET \
#       gpu-diagnose serve --host 0.0.0.0                                    # the service, /slack/commands
#
# More in docs/container.md.
ARG PYTHON=3.12

FROM python:${PYTHON}-slim AS build
WORKDIR /src
COPY pyproject.toml README.md LICENSE CHANGELOG.md ./
COPY diagnose ./diagnose
COPY rules ./rules
COPY docs ./docs
RUN pip wheel --no-cache-dir --wheel-dir /wheels '.[server,slack]'

FROM python:${PYTHON}-slim
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --no-index --find-links /wheels 'gpu-diagnose[server,slack]' \
    && rm -rf /wheels \
    && useradd --create-home --uid 10001 diagnose
# with --gpus all, the NVIDIA container toolkit mounts nvidia-smi and libnvidia-ml (NVML) for `collect`
ENV NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=utility \
    PYTHONDONTWRITEBYTECODE=1
USER diagnose
WORKDIR /work
# the compiled knowledge base, cached in the image so that the first run is as fast as the next
RUN diagnose --version
ENTRYPOINT ["diagnose"]
