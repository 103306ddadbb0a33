// Starts the fauxqs SQS emulator for Hooklane's local test stack.
//
// fauxqs's own CLI always binds 0.0.0.0; the stack must listen on loopback
// only, so this wrapper builds the same Fastify app and binds it to
// HOOKLANE_STACK_SQS_HOST (default 127.0.0.1) : HOOKLANE_STACK_SQS_PORT
// (default 4566). Queue URLs are derived from the request's Host header.
import { buildApp } from "fauxqs";

const host = process.env.HOOKLANE_STACK_SQS_HOST ?? "127.0.0.1";
const port = Number.parseInt(process.env.HOOKLANE_STACK_SQS_PORT ?? "4566", 10);
const logger = (process.env.FAUXQS_LOGGER ?? "false") !== "false";

const app = buildApp({ logger });

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}

try {
  const address = await app.listen({ host, port });
  console.log(`fauxqs listening on ${address}`);
} catch (err) {
  console.error(`fauxqs: listen on ${host}:${port}: ${err}`);
  process.exit(1);
}
