// The one look of every public page: escaping, layout, style and headers. No external assets.
import type { Response } from 'express';

/** Pages that post packages as JSON run one inline script; the others run none. */
const CSP = {
  static:
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
  scripted:
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
} as const;

export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(
    /[&<>"'`]/g,
    (c) =>
      ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' })[c] as string,
  );
}

export const yesNo = (v: boolean | undefined): string =>
  v === undefined
    ? '<span>not applicable</span>'
    : v
      ? '<span class="yes">yes</span>'
      : '<span class="no">no</span>';

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1b1f24}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
code,.hash{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #d0d7de;padding:.35rem .5rem;text-align:left;vertical-align:top}
.yes{color:#116329;font-weight:600}.no{color:#a40e26;font-weight:600}
textarea{width:100%;min-height:10rem;font-family:ui-monospace,monospace}input[type=text]{width:28rem;max-width:100%}
.error{background:#ffebe9;border:1px solid #ff8182;padding:.5rem}
.live{background:#ddf4ff;border:1px solid #54aeff;padding:.5rem}
`;

export function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${escapeHtml(title)}</title><style>${STYLE}</style></head>
<body><main>${body}</main></body></html>`;
}

export function sendPage(
  res: Response,
  status: number,
  title: string,
  body: string,
  opts: { scripts?: boolean; noStore?: boolean } = {},
): void {
  res.status(status).setHeader('Content-Security-Policy', opts.scripts ? CSP.scripted : CSP.static);
  if (opts.noStore) res.setHeader('Cache-Control', 'no-store');
  res.type('text/html; charset=utf-8').send(layout(title, body));
}
