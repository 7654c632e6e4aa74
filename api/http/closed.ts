// A reply's lifetime as an AbortSignal: long polls, event streams and A2A waits stop when the client goes.
import type { Response } from 'express';
import { leaveGate } from './overload';

/**
 * Aborts when the response's connection closes (the client left, or the reply was sent). A request
 * that asks for it is about to wait: it gives its place among the requests in flight up
 * (api/http/overload.ts).
 */
export function closedSignal(res: Response): AbortSignal {
  leaveGate(res);
  const closed = new AbortController();
  res.on('close', () => closed.abort());
  return closed.signal;
}
