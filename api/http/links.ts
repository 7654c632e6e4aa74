// Absolute links: the configured public address of each route table, else the request's own origin.
import type { Request } from 'express';
import type { AppDeps } from '../deps';

export type LinkBase = 'base' | 'api' | 'site';

export function origin(req: Request, deps: AppDeps, which: LinkBase = 'base'): string {
  const configured = deps.urls[which];
  if (configured) return configured.replace(/\/+$/, '');
  // Taken from the request's Host: the answer is marked uncacheable for others (see app.ts).
  if (req.res) req.res.locals.originFromRequest = true;
  return `${req.protocol}://${req.get('host') ?? 'localhost'}`;
}
