// The API docs at /docs: swagger-ui, listing both OpenAPI documents, under a policy fitted to its HTML.
// swagger-ui-express writes that HTML once, at start, from fixed options: its scripts are files under
// /docs, and the policy allows each of its inline styles by the hash of its exact text.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import express from 'express';
import swaggerUi from 'swagger-ui-express';
import type { SwaggerUiOptions } from 'swagger-ui-express';
import { fixedPageCsp } from './csp';

const DOCS_PATH = '/docs';

const options: SwaggerUiOptions = {
  explorer: true,
  customSiteTitle: 'proof-exchange API',
  // Without it the page carries a <style> element reading "undefined".
  customCss: '',
  swaggerOptions: {
    urls: [
      { url: '/openapi.json', name: 'Agent exchange (1.3.0)' },
      { url: '/openapi/platform.json', name: 'Platform: commercial, proof workflows, status' },
    ],
    // The online validator's badge is an image of validator.swagger.io, sent the document's address:
    // another origin, which the policy refuses.
    validatorUrl: null,
  },
};

/**
 * The <style> elements swagger-ui's scripts render into the page (the topbar logo's SVG carries one),
 * read from the files swagger-ui-express serves: fixed texts, allowed by hash like the page's own.
 */
function renderedStyles(): string[] {
  const fromExpress = createRequire(import.meta.resolve('swagger-ui-express'));
  const dir = (fromExpress('swagger-ui-dist/absolute-path') as () => string)();
  const element = /createElement\("style",null,("(?:[^"\\]|\\.)*")\)/g;
  return ['swagger-ui-bundle.js', 'swagger-ui-standalone-preset.js'].flatMap((file) =>
    [...readFileSync(join(dir, file), 'utf8').matchAll(element)].map((m) => JSON.parse(m[1]!) as string),
  );
}

let policy: string | undefined;
/** The policy of /docs: the hashes of the very HTML setup serves (generated from the same options). */
const docsPolicy = (): string =>
  (policy ??= fixedPageCsp(swaggerUi.generateHTML(undefined, options), renderedStyles()));

export function docsRouter(): express.Router {
  const router = express.Router();
  const csp = docsPolicy();
  router.use(DOCS_PATH, (_req, res, next) => {
    res.setHeader('Content-Security-Policy', csp);
    next();
  });
  router.use(DOCS_PATH, swaggerUi.serve, swaggerUi.setup(undefined, options));
  return router;
}
