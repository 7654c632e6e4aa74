// Routers a request cannot reach are passed by without being walked: Express tries a router's routes
// one by one, so a request for the last table's route paid for matching every route before it. A gate
// holds the static prefixes its router's paths begin with and hands it only the requests under one.
import type { RequestHandler } from 'express';

/** The literal start of a route path, up to its first parameter: '/api/jobs/{jobId}' → '/api/jobs/'. */
export function staticPrefix(path: string): string {
  const param = path.search(/[{:*]/);
  return (param < 0 ? path : path.slice(0, param)).toLowerCase();
}

/** The shortest set of prefixes covering them all (a prefix of another makes the other redundant). */
function covering(prefixes: Iterable<string>): string[] {
  const sorted = [...new Set(prefixes)].sort();
  const kept: string[] = [];
  for (const p of sorted) if (!kept.some((k) => p.startsWith(k))) kept.push(p);
  return kept;
}

/**
 * `handler` for the requests whose path begins with one of `prefixes` (case-insensitively, as Express
 * matches routes); every other request goes on at once.
 */
export function gateUnder(prefixes: Iterable<string>, handler: RequestHandler): RequestHandler {
  const under = covering(prefixes);
  return showing(handler, (req, res, next) => {
    const path = req.path.toLowerCase();
    for (const p of under) if (path.startsWith(p)) return handler(req, res, next);
    next();
  });
}

/** `handler` for every request not under `prefix` (pages and protocol endpoints outside the API). */
export function gateOutside(prefix: string, handler: RequestHandler): RequestHandler {
  const lower = prefix.toLowerCase();
  return showing(handler, (req, res, next) =>
    req.path.toLowerCase().startsWith(lower) ? next() : handler(req, res, next),
  );
}

/**
 * The gate shows the routes of the router it guards (its `stack`, as a router shows its own), so what
 * lists the app's routes (the OpenAPI test's walk) sees through it.
 */
function showing(inner: RequestHandler, gate: RequestHandler): RequestHandler {
  const stack = (inner as { stack?: unknown }).stack;
  return stack === undefined ? gate : Object.assign(gate, { stack });
}
