# syntax=docker/dockerfile:1
# dus-sync as a container: `docker run IMAGE plan` is `dus-sync plan`; the default command is
# the agent (`watch`) serving /healthz, /readyz and /metrics on DUS_SYNC_LISTEN (0.0.0.0:9090).
#
# The base is pinned to a Node 24 LTS minor line on Debian bookworm (slim): patch releases
# (security fixes) still arrive on rebuild, a new minor does not. For byte-for-byte reproducible
# builds pin the digest too, e.g. `--build-arg NODE_IMAGE=node:24.11-bookworm-slim@sha256:...`
# (look it up with `docker buildx imagetools inspect node:24.11-bookworm-slim`; the digest was
# not available where this file was written) and let Renovate or Dependabot keep it current.
ARG NODE_IMAGE=node:24.11-bookworm-slim

# ---- build: every dependency, compile, then drop the dev ones -------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# No install scripts run: nothing we depend on needs one (esbuild finds its binary through its
# optional platform package), and that closes the commonest supply-chain door.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY schemas ./schemas
COPY src ./src
# The build leaves V8's code cache of dist/ (scripts/code-cache.mjs), which V8 takes only under
# the flags it was made with: the same NODE_OPTIONS as the runtime stage below.
RUN NODE_OPTIONS=--max-semi-space-size=16 npm run build \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

# ---- runtime: dist, schemas and production dependencies only --------------------------------
FROM ${NODE_IMAGE} AS runtime
# tini as PID 1 forwards SIGTERM/SIGINT to dus-sync and reaps children (`diff` runs git).
# `watch` handles the signals itself (graceful stop, exit 0); one-off commands such as `apply`
# would otherwise ignore SIGTERM as PID 1 and be killed after the stop timeout.
# git: `diff --base` reads the base side from git objects, and plans record the revision.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini git ca-certificates \
 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
# V8's young generation as Node 20 sizes it, 16 MiB a semi-space: Node 24 lets it grow to 64 MiB
# on a machine with memory to spare, and watch at 200,000 records then peaked at 477 MB (the goal
# is 400) against 354 MB with this, save-to-applied the same (docs/performance.md). V8 reads it
# only when the heap is made, so it is node's flag, not one dus-sync could set for itself. The
# build stage made dist/'s code cache under the same flag: change both together.
ENV NODE_OPTIONS=--max-semi-space-size=16
# The intent journal, the apply lock and the history of appends: a volume, never the config
# mount (which is read-only, and swapped by git-sync).
ENV DUS_SYNC_STATE_DIR=/var/lib/dus-sync
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY --from=build /src/schemas ./schemas
RUN ln -s /app/dist/cli.js /usr/local/bin/dus-sync \
 && mkdir -p /config /var/lib/dus-sync \
 && chown node:node /var/lib/dus-sync
# The image's own `node` user (uid 1000): never root.
USER node
# Mount the config repository here (dus-sync.yaml at its top), read-only if you like. Give
# /var/lib/dus-sync (DUS_SYNC_STATE_DIR) a volume so that appends in doubt survive a restart.
WORKDIR /config
# Where `watch` serves its probes and metrics (the default of --listen). Change the port here,
# e.g. `docker run -e DUS_SYNC_LISTEN=0.0.0.0:8080`, and the HEALTHCHECK follows it.
ENV DUS_SYNC_LISTEN=0.0.0.0:9090
EXPOSE 9090
# slim images have no curl: Node's fetch does the probe, on the port of DUS_SYNC_LISTEN (an
# address of 0.0.0.0 or :: is probed on the loopback). A one-off command's container has no
# server to probe; give it --no-healthcheck.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "const l = process.env.DUS_SYNC_LISTEN || '0.0.0.0:9090'; const i = l.lastIndexOf(':'); let h = l.slice(0, i).replace(/^\\[|\\]$/g, ''); if (h === '' || h === '0.0.0.0' || h === '::') h = '127.0.0.1'; if (h.includes(':')) h = '[' + h + ']'; fetch('http://' + h + ':' + l.slice(i + 1) + '/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "-g", "--", "dus-sync"]
CMD ["watch"]
