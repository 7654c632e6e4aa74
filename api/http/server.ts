// The web process's HTTP server: limits that apply on time (a slow client is cut within the configured
// time, not at the next 30 s sweep of Node's connection checker), a cap on open connections, and what
// Node refuses before the app sees a request (malformed, headers too large, too slow) answered as
// problem+json like every other refusal.
import http from 'node:http';
import type { RequestListener, Server, ServerResponse } from 'node:http';
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

/** A whole HTTP answer in problem+json, after which the connection closes. */
function rawProblem(status: number, reason: string, code: string, detail: string): string {
  const body = JSON.stringify({ type: `/problems/${code}`, title: reason, status, detail, code });
  return (
    `HTTP/1.1 ${status} ${reason}\r\n` +
    'Content-Type: application/problem+json\r\n' +
    `Content-Length: ${Buffer.byteLength(body)}\r\n` +
    'Cache-Control: no-store\r\n' +
    'Connection: close\r\n\r\n' +
    body
  );
}

/**
 * What Node's HTTP parser refuses before any request reaches the app, by its error's code, in the form
 * every other refusal takes (Node's own answers are bare status lines).
 */
const parserRefusals: Record<string, string> = {
  HPE_HEADER_OVERFLOW: rawProblem(
    431,
    'Request Header Fields Too Large',
    'request_header_fields_too_large',
    'The request headers are larger than the server takes (16 KiB).',
  ),
  HPE_CHUNK_EXTENSIONS_OVERFLOW: rawProblem(
    413,
    'Payload Too Large',
    'payload_too_large',
    'The chunk extensions of the request body are larger than the server takes.',
  ),
  ERR_HTTP_REQUEST_TIMEOUT: rawProblem(
    408,
    'Request Timeout',
    'request_timeout',
    'The request did not arrive in time; send it again on a new connection.',
  ),
};
const badRequest = rawProblem(400, 'Bad Request', 'bad_request', 'The request is not valid HTTP/1.1.');
const answered = new WeakSet<Socket>();

/**
 * The server's 'clientError': a request the parser refused (malformed, headers too large) or that did
 * not arrive in time. Answered once, unless the answer to it has begun; then the connection closes
 * (cut after a second if the client keeps it open).
 */
function onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  if (answered.has(socket)) return;
  answered.add(socket);
  // The response of the request on the connection, while one is being answered (Node's own field: a
  // keep-alive connection has written earlier answers, so its byte count says nothing of this one).
  const current = (socket as Socket & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (err.code === 'ECONNRESET' || !socket.writable || current?.headersSent) {
    socket.destroy();
    return;
  }
  socket.setTimeout(1000, () => socket.destroy());
  socket.end((err.code && parserRefusals[err.code]) || badRequest);
}

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
  server.on('clientError', onClientError);
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
