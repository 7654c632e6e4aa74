// The one look of every public page: escaping, the page frame (header with a link home, footer), the
// shared stylesheet and the headers. No external assets, and no scripts but the voting and trustee
// pages' own, which carry the response's nonce (./csp.ts); every other page works without JavaScript.
import { readFileSync } from 'node:fs';
import express from 'express';
import type { Response } from 'express';
import { projectPath } from '../../shared/platform/paths';
import { PAGE_CSP, scriptPageCsp } from './csp';

/** A page that runs scripts: the nonce they carry, and whether they compile WebAssembly. */
export interface PageScripts {
  nonce: string;
  wasm?: boolean;
}

export const STYLESHEET_PATH = '/assets/site.css';
const stylesheet = readFileSync(projectPath('api/pages/assets/site.css'));
export const FAVICON_PATH = '/favicon.ico';
const favicon = readFileSync(projectPath('api/pages/assets/favicon.svg'));

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(
    /[&<>"'`]/g,
    (c) =>
      ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' })[c] as string,
  );
}

export const yesNo = (v: boolean | undefined): string =>
  v === undefined
    ? '<span class="na">not applicable</span>'
    : v
      ? '<span class="yes">yes</span>'
      : '<span class="no">no</span>';

const NAV: Array<[string, string]> = [
  ['/proof-workflows/verify/', 'Verify a proof'],
  ['/governance/', 'Governance'],
  ['/auctions/', 'Auctions'],
  ['/docs', 'API docs'],
];

export function layout(title: string, body: string, current?: string): string {
  const nav = NAV.map(
    ([href, label]) =>
      `<a href="${href}"${href === current ? ' aria-current="page"' : ''}>${escapeHtml(label)}</a>`,
  ).join(' '); // a space between links: separated even before (or without) the stylesheet
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><link rel="icon" href="${FAVICON_PATH}" type="image/svg+xml"><link rel="stylesheet" href="${STYLESHEET_PATH}"></head>
<body><header class="site-header"><div class="bar"><a class="brand" href="/">proof-exchange</a><nav aria-label="Site">${nav}</nav></div></header>
<main>${body}</main>
<footer class="site-footer"><p>Public pages show public facts only: never documents, ballots, bids or private inputs. <a href="/">Home</a></p></footer>
</body></html>`;
}

export function sendPage(
  res: Response,
  status: number,
  title: string,
  body: string,
  opts: { noStore?: boolean; current?: string; scripts?: PageScripts } = {},
): void {
  const { scripts } = opts;
  res
    .status(status)
    .setHeader('Content-Security-Policy', scripts ? scriptPageCsp(scripts.nonce, scripts) : PAGE_CSP);
  if (opts.noStore) res.setHeader('Cache-Control', 'no-store');
  res.type('text/html; charset=utf-8').send(layout(title, body, opts.current));
}

/** Serves the stylesheet every page links to. */
export function assetsRouter(): express.Router {
  const router = express.Router();
  router.get(STYLESHEET_PATH, (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.type('text/css; charset=utf-8').send(stylesheet);
  });
  // Browsers ask for /favicon.ico on every site: an SVG answers it (and the pages link it), not a 404.
  router.get([FAVICON_PATH, '/assets/favicon.svg'], (_req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=86400');
    res.type('image/svg+xml').send(favicon);
  });
  return router;
}

/** Paths of the API and the machine-read documents: a miss there is problem+json, whoever asks. */
const MACHINE_PATHS = /^\/(api|a2a|mcp|\.well-known|metrics|openapi|admin\/queues)(\/|\.|$)/;

/**
 * A page for a browser that asked for one at an address with nothing there (a mistyped or stale link):
 * the site's frame, the address, and where to go. API clients, and any request not for HTML first,
 * still get the RFC 9457 problem the next handler sends.
 */
export const browserNotFound: express.RequestHandler = (req, res, next) => {
  if (!['GET', 'HEAD'].includes(req.method) || MACHINE_PATHS.test(req.path)) return next();
  if (req.accepts(['application/problem+json', 'application/json', 'text/html']) !== 'text/html')
    return next();
  sendPage(
    res,
    404,
    'Not found',
    `<h1>Nothing here</h1>
<p class="lead">There is no page at <code>${escapeHtml(req.path)}</code>.</p>
<p>Go to the <a href="/">home page</a>, <a href="/proof-workflows/verify/">verify a proof</a>, or read the <a href="/docs">API docs</a>.</p>`,
  );
};
