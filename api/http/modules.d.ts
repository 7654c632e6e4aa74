// Types of the untyped packages the HTTP layer uses.
declare module 'proxy-addr' {
  import type { IncomingMessage } from 'node:http';

  /** The client address: the socket's, or the nearest X-Forwarded-For entry `trust` does not vouch for. */
  function proxyaddr(req: IncomingMessage, trust: (address: string, hop: number) => boolean): string;
  export default proxyaddr;
}
