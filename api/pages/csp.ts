// The Content-Security-Policy of every page the service serves, in one place. A page runs only the
// scripts it was sent with: no page allows inline script by name ('unsafe-inline') or eval, so markup
// injected into a page (a title, an option, a pasted document echoed back) cannot run. The voting and
// trustee pages — where a voter's identity secret and a trustee's key file are pasted — run scripts
// that carry a nonce made fresh for each response; every other page of ours runs none.
import { createHash, randomBytes } from 'node:crypto';

type Directives = Record<string, readonly string[]>;

const serialize = (directives: Directives): string =>
  Object.entries(directives)
    .map(([name, sources]) => `${name} ${sources.join(' ')}`)
    .join('; ');

/** What every page's policy ends with: no plugins, no <base>, never framed, forms post here only. */
const FRAME: Directives = {
  'object-src': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
};

/** A server-rendered page without scripts: this origin's stylesheet and favicon, nothing else. */
export const PAGE_CSP = serialize({
  'default-src': ["'none'"],
  'script-src': ["'none'"],
  'style-src': ["'self'"],
  'img-src': ["'self'"],
  ...FRAME,
});

/** 128 random bits, base64: the nonce of one response's scripts. */
export const newNonce = (): string => randomBytes(16).toString('base64');

/**
 * A page whose scripts carry `nonce`: those scripts (and the modules they import, which inherit the
 * nonce), fetches to this origin, and — on the voting page, where snarkjs compiles the circuit's
 * WebAssembly — `'wasm-unsafe-eval'`, which lets WebAssembly compile and nothing else (no eval).
 */
export function scriptPageCsp(nonce: string, opts: { wasm?: boolean } = {}): string {
  return serialize({
    'default-src': ["'none'"],
    'script-src': [`'nonce-${nonce}'`, ...(opts.wasm ? ["'wasm-unsafe-eval'"] : [])],
    'style-src': ["'self'"],
    'img-src': ["'self'"],
    'connect-src': ["'self'"],
    ...FRAME,
  });
}

/** A CSP hash source of a fixed inline text (a <style> element, a style attribute). */
export const sha256Source = (text: string): string =>
  `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The policy of a third-party page whose HTML is fixed at start (swagger-ui's, at /docs): its scripts
 * are files of this origin, and each inline style it carries is allowed by the hash of its exact text
 * — a style attribute by `'unsafe-hashes'` with its hash, which allows that one attribute value only;
 * `renderedStyles` are the texts of <style> elements its scripts add. Its stylesheet draws icons from
 * data: URLs.
 */
export function fixedPageCsp(html: string, renderedStyles: readonly string[] = []): string {
  const texts = (re: RegExp) => [...html.matchAll(re)].map((m) => m[1]!);
  const hashes = (all: string[]) => [...new Set(all.map(sha256Source))];
  const scripts = hashes(texts(/<script>([\s\S]*?)<\/script>/g));
  const styles = hashes([...texts(/<style>([\s\S]*?)<\/style>/g), ...renderedStyles]);
  const attributes = hashes(texts(/\sstyle="([^"]*)"/g));
  return serialize({
    'default-src': ["'none'"],
    'script-src': ["'self'", ...scripts],
    // style-src for a browser without the -elem and -attr directives: the elements, not the attribute.
    'style-src': ["'self'", ...styles],
    'style-src-elem': ["'self'", ...styles],
    'style-src-attr': attributes.length ? ["'unsafe-hashes'", ...attributes] : ["'none'"],
    'img-src': ["'self'", 'data:'],
    'connect-src': ["'self'"],
    ...FRAME,
  });
}
