// The "refuse" fault: a loopback URL where nothing listens, so a connection is refused at
// once (a vendor server that is not running, a wrong port).
import { createServer } from "node:net";

/** http://127.0.0.1:<port> of a port that was free a moment ago and is closed now. */
export async function unreachableUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
