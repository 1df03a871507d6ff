# mcp-exec container image.
#
#   build:   Debian bookworm with the -dev packages; CMake Release build of
#            mcp-exec, mcp-exec-zygote (the warm interpreter, beside it in
#            /usr/local/bin) and mcp-exec-client, stripped.
#   runtime: Debian bookworm-slim with python3 and the libraries user code
#            expects (numpy, pandas, matplotlib, PyYAML, Jinja2, Pillow), the
#            shared libraries the binaries link, and nothing else added: no
#            compiler, no curl, no package lists. Runs as uid/gid 65532.
#
# Build:   podman build -t mcp-exec:0.1.0 .     (or docker build)
# Run:     see docs/deployment.md; the production posture is
#          --read-only --cap-drop ALL --security-opt no-new-privileges
#          --user 65532:65532 --tmpfs /tmp
#
# BASE_IMAGE may be pinned by digest (debian:bookworm-slim@sha256:...) for
# reproducible builds; scripts/container-test.sh passes a locally
# debootstrapped bookworm base instead.
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libwebsockets-dev libcjson-dev libseccomp-dev libssl-dev libcurl4-openssl-dev libpcre2-dev \
      libpython3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY include ./include
COPY src ./src
COPY cmd ./cmd
COPY cmake ./cmake
COPY python ./python
COPY tests ./tests
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr/local \
 && cmake --build /build -j"$(nproc)" --target mcp-exec mcp-exec-zygote mcp-exec-client \
 && cmake --install /build --strip \
 && /usr/local/bin/mcp-exec --version

FROM ${BASE_IMAGE}
ARG DEBIAN_FRONTEND=noninteractive
LABEL org.opencontainers.image.title="mcp-exec" \
      org.opencontainers.image.description="Kubernetes-native MCP code-execution server (Python 3 in a per-execution sandbox)" \
      org.opencontainers.image.version="0.1.0"
# Runtime libraries of the binaries, python3 and the preloaded modules.
# ca-certificates lets mcp-exec-client talk to https endpoints.
# python3-munkres satisfies python3-fonttools' "python3-scipy | python3-munkres"
# dependency; without it apt picks scipy, whose python3-pythran dependency
# drags gcc, g++ and the Boost headers (~500 MB) into the runtime image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libwebsockets17 libcjson1 libseccomp2 libssl3 libcurl4 libpcre2-8-0 ca-certificates \
      libpython3.11 \
      python3 python3-numpy python3-pandas python3-matplotlib python3-yaml \
      python3-jinja2 python3-pil python3-munkres \
 && for cc in cc gcc g++ c++ cpp; do \
      if command -v "$cc" >/dev/null; then echo "$cc was pulled into the runtime image" >&2; exit 1; fi; \
    done \
 && apt-get clean \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old \
           /var/log/apt /var/log/dpkg.log \
 # The service user: uid/gid 65532, no home, no login shell.
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin nonroot \
 # No set-uid/set-gid programs: nothing in the image can regain privileges
 # even where no_new_privs is not set.
 && find / -xdev -type f -perm /6000 -exec chmod a-s {} + \
 # /tmp holds the per-run workdirs (a tmpfs or emptyDir at run time; runc
 # copies this mode onto the tmpfs).
 && chmod 1777 /tmp
COPY --from=build /usr/local/bin/mcp-exec /usr/local/bin/mcp-exec-zygote \
     /usr/local/bin/mcp-exec-client /usr/local/bin/
ENV MCP_EXEC_TRANSPORT=http \
    MCP_EXEC_ADDR=0.0.0.0:8080 \
    MCP_EXEC_PYTHON=/usr/bin/python3
USER 65532:65532
WORKDIR /tmp
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/mcp-exec"]
