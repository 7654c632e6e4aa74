// A loopback TCP proxy for outage tests: the app's Postgres or Redis is reached through it, and the
// test cuts it, never the shared servers.
import type { AddressInfo } from 'node:net';
import net from 'node:net';

/** A loopback TCP proxy to a port; `down()` cuts every connection and refuses new ones until `up()`. */
export async function tcpProxy(targetPort: number) {
  const open = new Set<net.Socket>();
  let refusing = false;
  const server = net.createServer((client) => {
    if (refusing) {
      client.destroy();
      return;
    }
    const upstream = net.connect(targetPort, '127.0.0.1');
    open.add(client).add(upstream);
    const drop = () => {
      client.destroy();
      upstream.destroy();
      open.delete(client);
      open.delete(upstream);
    };
    client.on('error', drop).on('close', drop);
    upstream.on('error', drop).on('close', drop);
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    down() {
      refusing = true;
      for (const s of open) s.destroy();
      open.clear();
    },
    up() {
      refusing = false;
    },
    close: () =>
      new Promise<void>((r) => {
        for (const s of open) s.destroy();
        server.close(() => r());
      }),
  };
}
