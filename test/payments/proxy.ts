// A loopback TCP proxy in front of a node, switchable between forwarding, refusing connections (the port
// closed) and swallowing them (accepted, never answered), to play an RPC endpoint going down and up.
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export type ProxyMode = 'up' | 'refuse' | 'stall';

export interface Proxy {
  url: string;
  mode(): ProxyMode;
  /** Cuts every open connection, then serves new ones in the given mode, on the same port. */
  set(mode: ProxyMode): Promise<void>;
  close(): Promise<void>;
}

export async function startProxy(target: string): Promise<Proxy> {
  const upstream = new URL(target);
  const sockets = new Set<net.Socket>();
  let current: ProxyMode = 'up';
  let server: net.Server | undefined;
  let port = 0;

  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const onConnection = (client: net.Socket) => {
    track(client);
    if (current === 'stall') return; // read nothing, answer nothing: the caller's timeout has to fire
    const out = net.connect(Number(upstream.port), upstream.hostname);
    track(out);
    client.on('close', () => out.destroy());
    out.on('close', () => client.destroy());
    client.pipe(out).pipe(client);
  };
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      const s = net.createServer(onConnection);
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        port = (s.address() as AddressInfo).port;
        server = s;
        resolve();
      });
    });
  const stopListening = () =>
    new Promise<void>((resolve) => {
      const s = server;
      server = undefined;
      if (!s) return resolve();
      s.close(() => resolve());
      for (const socket of sockets) socket.destroy();
    });

  await listen();
  return {
    url: `http://127.0.0.1:${port}`,
    mode: () => current,
    async set(mode) {
      current = mode;
      for (const socket of sockets) socket.destroy();
      if (mode === 'refuse') await stopListening();
      else if (!server) await listen();
    },
    close: stopListening,
  };
}
