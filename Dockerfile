# lockbench in a container, for shards on Kubernetes (deploy/kubernetes) or anywhere else.
#
#   docker build -t lockbench:0.1.0 .
#   docker run --rm lockbench:0.1.0 ttl /specs/billing.toml --target-scale 10
#
# The build stage builds the binary exactly as the README does (`cargo build --release`, the
# workspace's release profile); the runtime stage is a slim Debian with that binary, the shipped
# specs and the default config, and a shell for the merge Job's glob.

FROM rust:1.88-bookworm AS build
# etcd-client's build script compiles etcd's protobuf definitions.
RUN apt-get update \
    && apt-get install -y --no-install-recommends protobuf-compiler \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
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
