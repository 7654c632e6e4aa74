// The web process's HTTP server: limits that apply on time (a slow client is cut within the configured
// time, not at the next 30 s sweep of Node's connection checker) and a cap on open connections.
import http from 'node:http';
import type { RequestListener, Server } from 'node:http';
import type { Socket } from 'node:net';

export interface ServerLimits {
  /** The request's headers must have arrived within this many ms of its first byte. */
  headersTimeoutMs: number;
  /** The whole request (headers and body) must have arrived within this many ms. */
  requestTimeoutMs: number;
  /** Open connections past this are answered 503 and closed at once. */
  maxConnections: number;
  /** An idle keep-alive connection is closed after this many ms. */
  keepAliveTimeoutMs?: number;
}

/** The refusal a connection past the cap gets: a whole HTTP answer, then the connection closes. */
const refusalBody = JSON.stringify({
  type: '/problems/service_unavailable',
  title: 'Service Unavailable',
  status: 503,
  detail: 'The server has as many connections open as it takes; try again shortly.',
  code: 'service_unavailable',
});
const refusal =
  'HTTP/1.1 503 Service Unavailable\r\n' +
  'Content-Type: application/problem+json\r\n' +
  `Content-Length: ${Buffer.byteLength(refusalBody)}\r\n` +
  'Retry-After: 1\r\n' +
  'Connection: close\r\n\r\n' +
  refusalBody;

export function createWebServer(app: RequestListener, limits: ServerLimits): Server {
  const server = http.createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs ?? 65_000,
      // Node checks both timeouts on this period: a quarter of the shorter keeps each within 25 % of its
      // value (the default, 30 s, let a 10 s header limit run to 40 s).
      connectionsCheckingInterval: Math.max(
        100,
        Math.floor(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 4),
      ),
    },
    app,
  );
  // Counted here rather than with server.maxConnections, which drops a connection without a word. A
  // connection past the cap never reaches the HTTP parser: no request on it runs.
  const open = new Set<Socket>();
  const emit = server.emit.bind(server) as (event: string, ...args: unknown[]) => boolean;
  server.emit = ((event: string, ...args: unknown[]) => {
    if (event === 'connection') {
      const socket = args[0] as Socket;
      if (open.size >= limits.maxConnections) {
        socket.on('error', () => undefined);
        // What the client sent is read and dropped (closing on unread bytes would reset the connection
        // before the answer arrives); a client that does not close in turn is cut after a second.
        socket.resume();
        socket.setTimeout(1000, () => socket.destroy());
        socket.end(refusal);
        return true;
      }
      open.add(socket);
      socket.once('close', () => open.delete(socket));
    }
    return emit(event, ...args);
  }) as Server['emit'];
  return server;
}
