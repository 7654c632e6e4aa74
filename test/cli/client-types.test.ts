// The typed client's committed types are what openapi-typescript makes of the documents the service
// serves now: a route whose schema changed without `npm run client:generate` fails here.
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIENT_TYPES, clientTypes } from '../../scripts/client-generate';
import { testApp } from '../helpers';
import type { TestApp } from '../helpers';

let app: TestApp;
beforeAll(() => {
  app = testApp();
});
afterAll(() => app?.close());

describe('the typed client', () => {
  it.each(Object.entries(CLIENT_TYPES))(
    '%s: the committed types are generated from the served document',
    async (_name, { file, served }) => {
      const document = (await app.request.get(served).expect(200)).body as unknown;
      const committed = readFileSync(file, 'utf8');
      // One line of the diff is enough to say what drifted.
      const fresh = await clientTypes(document, served);
      if (fresh !== committed) {
        const a = committed.split('\n');
        const b = fresh.split('\n');
        const i = a.findIndex((line, n) => line !== b[n]);
        expect.fail(
          `${file} differs from ${served} at line ${i + 1}: run \`npm run client:generate\`\n` +
            `committed: ${a[i]}\nserved:    ${b[i]}`,
        );
      }
    },
    60_000,
  );
});
