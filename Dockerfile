# counterparty-gateway: one image for the gateway and the emulator.
#   docker build -t cpgw .
#   docker run -p 8080:8080 -e CPGW_UPSTREAM_API_KEY=... -e CPGW_CONFIG=/config/gateway.yaml -v $PWD/config:/config:ro cpgw
# Without CPGW_UPSTREAM_API_KEY it starts in demo mode (bundled emulator, demo app).
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY src ./src
COPY config ./config
ENV CPGW_HOST=0.0.0.0 CPGW_PORT=8080
EXPOSE 8080
USER node
HEALTHCHECK --interval=10s --timeout=3s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.CPGW_PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "bin/cpgw.js", "start"]
