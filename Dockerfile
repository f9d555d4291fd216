# gpuqd, gpuq, gpuq-shim and the reservation pods' script gpuq-reserve in a small Debian 12
# image, for deploy/kubernetes/ (README.md there). gpuqd's pods and its reservation pods (shared
# GPUs) both run this image.
#
#   docker build -t gpuq:latest .          # from the repository root
#
# Two stages: the build stage has the compilers and -dev packages; the runtime stage only the
# shared libraries the three programs load, so the image carries no compiler and no headers.

# ---- build
FROM debian:12 AS build

# scripts/deps.sh's list, less what only the tests need: doctest-dev (the test suites),
# chromium (the simulator report's browser test), python3-kubernetes and kubernetes-client
# (checks of the fake API server).
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake ninja-build g++ pkg-config \
      libboost1.81-dev libboost-json1.81-dev libboost-graph1.81-dev \
      libyaml-dev libcli11-dev \
      libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
      libsqlite3-dev libspdlog-dev libssl-dev prometheus-cpp-dev \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /src
# The source folders the programs are built from (not tests/, bench/ or local build folders:
# a stale CMakeCache.txt in the context must not reach the build).
COPY CMakeLists.txt ./
COPY spec/ spec/
COPY drf/ drf/
COPY preemption/ preemption/
COPY scheduler/ scheduler/
COPY sim/ sim/
COPY storage/ storage/
COPY binder/ binder/
COPY api/ api/
COPY cli/ cli/
COPY daemon/ daemon/

RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DGPUQ_BUILD_TESTS=OFF -DGPUQ_BUILD_BENCH=OFF \
 && cmake --build build --target gpuqd gpuq gpuq-full gpuq-shim \
 && strip build/daemon/gpuqd build/cli/gpuq build/cli/gpuq-full build/daemon/gpuq-shim

# ---- runtime
FROM debian:12-slim

# What `ldd build/daemon/gpuqd build/cli/gpuq build/daemon/gpuq-shim` lists, mapped to Debian 12
# packages with `dpkg -S`:
#   libgrpc++1.51       libgrpc++.so.1.51, libgrpc++_reflection.so.1.51
#   libgrpc29           libgrpc.so.29, libgpr.so.29, libupb.so.29, libaddress_sorting.so.29
#   libprotobuf32       libprotobuf.so.32
#   libabsl20220623     libabsl_*.so.20220623
#   libre2-9            libre2.so.9
#   libc-ares2          libcares.so.2
#   libssl3             libssl.so.3, libcrypto.so.3
#   libboost-json1.81.0 libboost_json.so.1.81.0
#   libyaml-0-2         libyaml-0.so.2
#   libsqlite3-0        libsqlite3.so.0
#   libspdlog1.10       libspdlog.so.1.10
#   libprometheus-cpp-core1.0 libprometheus-cpp-core.so.1.0 (gpuqd)
#   libfmt9             libfmt.so.9
#   zlib1g              libz.so.1
#   (libc6, libstdc++6, libgcc-s1: already in debian:12-slim)
# ca-certificates: a kubeconfig without certificate-authority data is checked against the
# system's trust store (in a pod gpuqd uses the service account's ca.crt instead).
# curl: deploy/kubernetes/gpuq-reserve, run by reservation pods, patches its pod with it.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 libre2-9 libc-ares2 \
      libssl3 libboost-json1.81.0 libyaml-0-2 libsqlite3-0 libspdlog1.10 libfmt9 zlib1g \
      libprometheus-cpp-core1.0 \
      ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*

# gpuq-shim next to gpuqd: where binder: local looks for it by default; gpuq-full next to gpuq,
# which runs it for what it does not do itself (cli/README.md). gpuq-reserve where
# kubernetes.reservationCommand says (default /usr/lib/gpuq/gpuq-reserve).
COPY --from=build /src/build/daemon/gpuqd /src/build/daemon/gpuq-shim /src/build/cli/gpuq /src/build/cli/gpuq-full \
     /usr/local/bin/
COPY deploy/kubernetes/gpuq-reserve /usr/lib/gpuq/gpuq-reserve

# A fixed uid (deployment.yaml's runAsUser) so that runAsNonRoot can be checked by the kubelet;
# /var/lib/gpuq is where the state file goes (an emptyDir in the Deployment).
RUN groupadd --system --gid 10001 gpuq \
 && useradd --system --uid 10001 --gid 10001 --home-dir /var/lib/gpuq --no-create-home --shell /usr/sbin/nologin gpuq \
 && chmod 0755 /usr/lib/gpuq/gpuq-reserve \
 && mkdir -p /var/lib/gpuq /etc/gpuq \
 && chown 10001:10001 /var/lib/gpuq
USER 10001:10001
WORKDIR /var/lib/gpuq

# HTTP (/metrics, /healthz, /readyz); gRPC is on loopback and the Unix socket
# (deploy/kubernetes/configmap.yaml).
EXPOSE 7434
ENTRYPOINT ["/usr/local/bin/gpuqd"]
CMD ["--config", "/etc/gpuq/gpuqd.yaml"]
