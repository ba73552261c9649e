# dlq-archive daemon image: multi-stage Debian 12 build, non-root runtime.
#   docker build -t dlq-archive .
#   docker run --rm -p 9464:9464 -v $PWD/dlq-archive.yaml:/etc/dlq-archive/dlq-archive.yaml:ro dlq-archive
# The config must listen on 0.0.0.0:9464 for the port mapping and probes to
# reach it (deploy/k8s/configmap.yaml does). Not built in this repository's CI
# (no container engine there); tests/packaging/deb_test.sh checks that the
# runtime stage installs every library the .deb's dpkg-shlibdeps found.
# See doc/operations.md, "Docker".

FROM debian:12-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build pkg-config \
      libcurl4-openssl-dev libssl-dev zlib1g-dev libdeflate-dev libisal-dev libsimdjson-dev rapidjson-dev \
      libpugixml-dev libyaml-cpp-dev libcli11-dev libfmt-dev libcpp-httplib-dev libgoogle-perftools-dev libre2-dev libsqlite3-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt LICENSE README.md ./
COPY cmake/ cmake/
COPY src/ src/
COPY web/ web/
COPY packaging/ packaging/
COPY doc/ doc/
COPY examples/ examples/
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDLQ_TESTS=OFF -DDLQ_BENCH=OFF \
      -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc -DDLQ_INSTALL_SYSTEMD_UNIT=OFF \
 && ninja -C build dlq-archive \
 && DESTDIR=/out cmake --install build --strip

FROM debian:12-slim
# Runtime libraries: the .deb's Depends (dpkg-shlibdeps), kept in step by tests/packaging/deb_test.sh.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates libcurl4 libssl3 zlib1g libdeflate0 libisal2 libsimdjson14 libpugixml1v5 libyaml-cpp0.7 \
      libfmt9 libcpp-httplib0.11 libtcmalloc-minimal4 libre2-9 libsqlite3-0 libstdc++6 libgcc-s1 libc6 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/usr/bin/dlq-archive /usr/bin/dlq-archive
COPY --from=build /out/etc/dlq-archive/ /etc/dlq-archive/
COPY --from=build /out/usr/share/doc/dlq-archive/ /usr/share/doc/dlq-archive/
# A numeric non-root user (no entry in /etc/passwd needed; Kubernetes'
# runAsNonRoot can verify it). HOME for an optional ~/.aws mount.
ENV HOME=/home/dlq-archive
RUN mkdir -p /home/dlq-archive /var/lib/dlq-archive && chown 65532:65532 /home/dlq-archive /var/lib/dlq-archive
USER 65532:65532
EXPOSE 9464
# SIGTERM: stop receiving, finish uploads and deletes in flight, exit 0.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/bin/dlq-archive"]
CMD ["run", "--config", "/etc/dlq-archive/dlq-archive.yaml"]
