# mcp-exec container image.
#
#   build:   Debian bookworm with the -dev packages; CMake Release build of
#            mcp-exec, mcp-exec-zygote (the warm interpreter, which the
#            server finds beside itself) and mcp-exec-client, stripped.
#   assemble: the runtime packages installed on Debian, then only the files
#            that run copied into /rootfs by scripts/image-rootfs.py (an
#            allowlist: the packages' dependency closure minus dpkg, apt,
#            perl, the shells and coreutils).
#   runtime: FROM scratch + /rootfs: the three binaries, their shared
#            libraries, Debian's python3 with numpy, pandas, matplotlib,
#            PyYAML, Jinja2 and Pillow, bash with coreutils, grep, sed, gawk,
#            findutils, jq, sqlite3 and file (exec's language "bash"), CA
#            certificates and time zones; the node variant adds Debian's
#            nodejs (language "javascript"). No /bin/sh, no package manager,
#            no perl. Runs as uid/gid 65532.
#
# Build:   podman build -t mcp-exec:0.1.0 .     (or docker build)
#          podman build --build-arg VARIANT=node -t mcp-exec:0.1.0-node .
#          VARIANT: standard (Python and bash, the default) or node (Python,
#          bash and JavaScript; Node.js and its ICU data add ~90 MB, which
#          is why it is not the default: docs/deployment.md, image size).
# Run:     see docs/deployment.md; the production posture is
#          --read-only --read-only-tmpfs=false --cap-drop ALL
#          --security-opt no-new-privileges --user 65532:65532 --tmpfs /tmp
#          (podman's --read-only alone also mounts writable /var/tmp and /run)
#
# BASE_IMAGE may be pinned by digest (debian:bookworm-slim@sha256:...) for
# reproducible builds; scripts/container-test.sh passes a locally
# debootstrapped bookworm base instead.
#
# Your own packages (docs/deployment.md, "Your own packages"):
#          --build-arg EXTRA_PACKAGES="python3-scipy python3-sklearn"
#            Debian packages added to the runtime with their dependencies;
#          --build-arg WHEELS_DIR=image/wheels
#            a directory of the build context whose *.whl files are
#            installed (pip, no index, no dependency resolution: every
#            dependency Debian does not provide must be a wheel there too)
#            into /usr/local/lib/python3.11/dist-packages;
#          --build-arg EXTRA_IMPORTS="scipy sklearn mymodule"
#            modules scripts/image-check.py must import in the assembled
#            tree, so a missing library fails the build, not a run.
#          These steps come after the standard packages' layer, so a
#          variant rebuilds only from there on.
ARG BASE_IMAGE=debian:bookworm-slim

FROM ${BASE_IMAGE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libwebsockets-dev libcjson-dev libseccomp-dev libssl-dev libcurl4-openssl-dev libpcre2-dev \
      libhiredis-dev libpython3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY cmake ./cmake
COPY python ./python
COPY include ./include
COPY src ./src
COPY cmd ./cmd
COPY tests ./tests
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=/usr/local \
 && cmake --build /build -j"$(nproc)" --target mcp-exec mcp-exec-zygote mcp-exec-client \
 && cmake --install /build --strip \
 && /usr/local/bin/mcp-exec --version

# Assembly: install the runtime packages on a normal Debian system, then copy
# only what runs (scripts/image-rootfs.py) into /rootfs.
FROM ${BASE_IMAGE} AS assemble
ARG DEBIAN_FRONTEND=noninteractive
ARG VARIANT=standard
# A bash run's shell and tools, and a JavaScript run's runtime (language.c
# finds /usr/bin/bash and /usr/bin/node at start-up).
ARG BASH_PACKAGES="bash coreutils grep sed gawk findutils jq sqlite3 file"
ARG NODE_PACKAGES="nodejs"
# Runtime libraries of the binaries, python3 and the modules runs may import.
# ca-certificates lets mcp-exec-client (and libcurl) verify https peers.
# libcurl4 and libhiredis0.14 are named here because mcp-exec loads them
# with dlopen on first use (src/base/curl_lib.c, src/store/hiredis_lib.c), so
# no NEEDED entry of the server pulls them in; image-check.py loads both.
# python3-munkres satisfies python3-fonttools' "python3-scipy | python3-munkres"
# dependency; without it apt picks scipy, whose python3-pythran dependency
# drags gcc, g++ and the Boost headers (~500 MB) in.
ARG RUNTIME_PACKAGES="libwebsockets17 libcjson1 libseccomp2 libssl3 libcurl4 libpcre2-8-0 libhiredis0.14 \
    ca-certificates tzdata \
    libpython3.11 \
    python3 python3-numpy python3-pandas python3-matplotlib python3-yaml python3-jinja2 python3-pil \
    python3-munkres"
RUN case "${VARIANT}" in \
      standard) echo "bash" > /tmp/languages; echo "${BASH_PACKAGES}" > /tmp/language-packages ;; \
      node) echo "bash javascript" > /tmp/languages; echo "${BASH_PACKAGES} ${NODE_PACKAGES}" > /tmp/language-packages ;; \
      *) echo "VARIANT must be standard or node, not ${VARIANT}" >&2; exit 1 ;; \
    esac \
 && apt-get update \
 && apt-get install -y --no-install-recommends ${RUNTIME_PACKAGES} $(cat /tmp/language-packages)
# A platform team's own packages and wheels (see the top of this file). Empty
# by default: the layer above, with everything standard, is shared by every
# variant. pip is installed into this stage only; the runtime gets what it
# installed, not pip.
ARG EXTRA_PACKAGES=""
ARG WHEELS_DIR=image/wheels
ARG EXTRA_IMPORTS=""
COPY ${WHEELS_DIR}/ /tmp/wheels/
RUN if [ -n "${EXTRA_PACKAGES}" ]; then \
      apt-get install -y --no-install-recommends ${EXTRA_PACKAGES}; \
    fi \
 && mkdir -p /usr/local/lib/python3.11/dist-packages \
 && if ls /tmp/wheels/*.whl >/dev/null 2>&1; then \
      apt-get install -y --no-install-recommends python3-pip \
      && python3 -m pip install --no-index --no-deps --break-system-packages \
           --target /usr/local/lib/python3.11/dist-packages /tmp/wheels/*.whl; \
    fi \
 && rm -rf /tmp/wheels
COPY --from=build /usr/local/bin/mcp-exec /usr/local/bin/mcp-exec-zygote \
     /usr/local/bin/mcp-exec-client /usr/local/bin/
COPY scripts/image-rootfs.py /usr/local/lib/image-rootfs.py
# Declared by Debian, not needed by what the image offers (scripts/image-check.py
# proves the rest works without them): fontTools' dependency on sympy (and
# mpmath), unicode-data and lxml serves font tools matplotlib does not use;
# matplotlib's on Pillow's Tk support, Tk and the jQuery bundles serve
# interactive windows and HTML docs. Together ~250 MB.
ARG DROP_PACKAGES="python3-sympy python3-mpmath unicode-data python3-lxml python3-tk \
    python3-pil.imagetk tk8.6-blt2.5 blt libtk8.6 libtcl8.6 libjs-jquery libjs-jquery-ui"
COPY scripts/image-check.py /usr/local/lib/image-check.py
RUN python3 /usr/local/lib/image-rootfs.py --out /rootfs \
      --packages "${RUNTIME_PACKAGES} $(cat /tmp/language-packages) ${EXTRA_PACKAGES}" \
      --languages "$(cat /tmp/languages)" \
      --drop "${DROP_PACKAGES}" \
      --extra /usr/local/bin/mcp-exec /usr/local/bin/mcp-exec-zygote /usr/local/bin/mcp-exec-client \
      --extra-tree /usr/local/lib/python3.11/dist-packages \
      --check-imports "${EXTRA_IMPORTS}" \
      --check "/usr/local/bin/mcp-exec --version" \
      --check "/usr/local/bin/mcp-exec-client --help" \
      --check-script /usr/local/lib/image-check.py

# Runtime: the assembled tree and nothing else. No /bin/sh, no package
# manager, no perl (bash and its tools are there for bash runs; nothing in
# the server uses them); runs as uid/gid 65532 by default and under
# any other uid (OpenShift assigns one, with gid 0): the only path it writes
# is /tmp (mode 1777, a tmpfs or emptyDir at run time).
FROM scratch
LABEL org.opencontainers.image.title="mcp-exec" \
      org.opencontainers.image.description="Kubernetes-native MCP code-execution server (Python 3, bash and, in the node variant, JavaScript in a per-execution sandbox)" \
      org.opencontainers.image.version="0.1.0"
COPY --from=assemble /rootfs/ /
ENV MCP_EXEC_TRANSPORT=http \
    MCP_EXEC_ADDR=0.0.0.0:8080 \
    MCP_EXEC_PYTHON=/usr/bin/python3 \
    PATH=/usr/local/bin:/usr/bin
USER 65532:65532
WORKDIR /tmp
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/mcp-exec"]
