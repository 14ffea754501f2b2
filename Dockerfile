# lockbench in a container, for shards on Kubernetes (deploy/kubernetes) or anywhere else.
#
#   docker build --build-arg LOCKBENCH_GIT_COMMIT=$(git rev-parse --short=12 HEAD) -t lockbench:0.1.0 .
#   docker run --rm lockbench:0.1.0 ttl /specs/billing.toml --target-scale 10
#
# .dockerignore leaves .git out of the context, so the commit the manifests name comes in as the
# build argument above (without it they say no commit).
#
# The build stage builds the binary exactly as the README does (`cargo build --release`, the
# workspace's release profile); the runtime stage is a slim Debian with that binary, the shipped
# specs and the default config, and a shell for the merge Job's glob.

FROM rust:1.95-bookworm AS build
ARG LOCKBENCH_GIT_COMMIT=
# etcd-client's build script compiles etcd's protobuf definitions.
RUN apt-get update \
    && apt-get install -y --no-install-recommends protobuf-compiler \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ENV LOCKBENCH_GIT_COMMIT=${LOCKBENCH_GIT_COMMIT}
RUN cargo build --release

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --create-home lockbench
COPY --from=build /src/target/release/lockbench /usr/local/bin/lockbench
COPY workloads/specs /specs
COPY lockbench.toml /etc/lockbench/lockbench.toml
USER 10001
WORKDIR /home/lockbench
ENTRYPOINT ["lockbench"]
CMD ["--help"]
