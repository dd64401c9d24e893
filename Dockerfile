# counterparty-gateway: one image for the gateway and the emulator.
#   docker build -t cpgw .
#   docker run -p 8080:8080 --read-only -v cpgw-state:/var/lib/cpgw \
#     -e CPGW_UPSTREAM_API_KEY=... -e CPGW_CONFIG=/config/gateway.yaml -v $PWD/config:/config:ro cpgw
# Without CPGW_UPSTREAM_API_KEY it starts in demo mode (bundled emulator, demo app).
# The runtime stage holds the production dependencies and the compiled dist/ only (no TypeScript,
# no tsx), runs as the unprivileged `node` user and writes nowhere but CPGW_STATE_DIR, so it runs
# with a read-only root file system (`--read-only`; test/integration/production-install.test.ts
# proves the same install under a read-only mount).

FROM node:24-bookworm-slim AS build
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY src ./src
RUN npm run build

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY bin/cpgw.js bin/dist-state.js ./bin/
COPY --from=build /build/dist ./dist
COPY config ./config
COPY LICENSE ./
# The gateway's own state (without Redis the money database money.db; a local outbox): the one
# place it may write.
ENV CPGW_STATE_DIR=/var/lib/cpgw CPGW_HOST=0.0.0.0 CPGW_PORT=8080
RUN mkdir -p /var/lib/cpgw && chown node:node /var/lib/cpgw
VOLUME ["/var/lib/cpgw"]
EXPOSE 8080
# The metrics listener (GET /metrics only); set CPGW_METRICS_HOST=0.0.0.0 to reach it from outside.
EXPOSE 9464
USER node
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.CPGW_PORT||8080)+'/livez').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
# compose.yaml's gateways and deploy/kubernetes's Deployment run this same command (their tests).
CMD ["node", "bin/cpgw.js", "start"]
