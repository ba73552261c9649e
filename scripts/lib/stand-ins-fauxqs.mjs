// Runs fauxqs (SQS + S3 stand-in) listening on 127.0.0.1 only.
// fauxqs's own CLI listens on 0.0.0.0; this wrapper builds the same Fastify app through the package's
// public buildApp() and binds it to loopback. Usage: node stand-ins-fauxqs.mjs <path to fauxqs/dist/app.js>
// Env: FAUXQS_PORT (required), FAUXQS_HOST (queue URL host part, default "localhost"),
// FAUXQS_DEFAULT_REGION (default us-east-1), FAUXQS_LOGGER (true/false, default true).
import { pathToFileURL } from "node:url";

const appPath = process.argv[2];
if (!appPath) {
  console.error("usage: stand-ins-fauxqs.mjs <fauxqs/dist/app.js>");
  process.exit(2);
}
const { buildApp } = await import(pathToFileURL(appPath).href);
const port = Number.parseInt(process.env.FAUXQS_PORT ?? "", 10);
if (!Number.isInteger(port) || port <= 0) {
  console.error("stand-ins-fauxqs: FAUXQS_PORT must be a port number");
  process.exit(2);
}
const app = buildApp({
  logger: (process.env.FAUXQS_LOGGER ?? "true") !== "false",
  host: process.env.FAUXQS_HOST || undefined,
  defaultRegion: process.env.FAUXQS_DEFAULT_REGION || undefined,
});
let closing = false;
for (const sig of ["SIGTERM", "SIGINT"]) {
  process.on(sig, () => {
    if (closing) return;
    closing = true;
    app.close().finally(() => process.exit(0));
  });
}
try {
  const address = await app.listen({ port, host: "127.0.0.1" });
  console.error(`stand-ins-fauxqs: listening on ${address}`);
} catch (err) {
  console.error(`stand-ins-fauxqs: cannot listen on 127.0.0.1:${port}: ${err.message}`);
  process.exit(1);
}
