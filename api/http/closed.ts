// A reply's lifetime as an AbortSignal: long polls, event streams and A2A waits stop when the client goes.
import type { Response } from 'express';

/** Aborts when the response's connection closes (the client left, or the reply was sent). */
export function closedSignal(res: Response): AbortSignal {
  const closed = new AbortController();
  res.on('close', () => closed.abort());
  return closed.signal;
}
