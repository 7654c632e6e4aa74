// The route a request matched, as metrics and traces name it: the pattern with the path it is mounted
// under (a router's routes, the A2A transports' among them, see only their own part), never the path
// itself (ids, tokens in links). Unmatched requests are 'unmatched'; a request answered by a mounted
// middleware before any route (a refusal in front of the A2A transports) is named by its mount path.
import type { Request, Response } from 'express';

export function routeOf(req: Request, res: Response): string | undefined {
  const pattern = req.route?.path as unknown;
  if (pattern !== undefined) {
    const own = String(pattern);
    if (!req.baseUrl) return own;
    return own === '/' ? req.baseUrl : `${req.baseUrl}${own}`;
  }
  if (res.statusCode === 404) return 'unmatched';
  return req.baseUrl || undefined;
}
