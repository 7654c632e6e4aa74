// docs/a2a.md's client example, run as written: the ```js block of "A client, with `@a2a-js/sdk`",
// saved as a file in this checkout and run with node against this file's server, prints the completed
// task and its signed result; the job is there under the same id.
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { app, base, useA2AStack } from './fixtures';

useA2AStack();

function example(): string {
  const doc = readFileSync('docs/a2a.md', 'utf8');
  const start = doc.indexOf('\n## A client, with `@a2a-js/sdk`\n');
  if (start < 0) throw new Error('docs/a2a.md has no client example section');
  const block = /```js\n([\s\S]*?)```/.exec(doc.slice(start));
  if (!block) throw new Error('the client example has no js block');
  return block[1]!;
}

describe('the A2A client example of docs/a2a.md', () => {
  it('runs as written and gets the completed task, its result signed', async () => {
    // In the checkout, as the doc says: @a2a-js/sdk resolves from its node_modules.
    const dir = resolve('.cache', `a2a-example-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const file = join(dir, 'a2a-client.mjs');
    writeFileSync(file, example());
    try {
      const { code, stdout, stderr } = await new Promise<{ code: number; stdout: string; stderr: string }>(
        (done) =>
          execFile(
            process.execPath,
            [file],
            { env: { ...process.env, PX_URL: base }, timeout: 60_000 },
            (err, out, errOut) =>
              done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout: out, stderr: errOut }),
          ),
      );
      expect(code, stderr).toBe(0);
      const [state, summary] = stdout.trim().split('\n');
      expect(state).toBe('TASK_STATE_COMPLETED');
      const { task, signedBy } = JSON.parse(summary!) as { task: string; signedBy: string };
      expect(signedBy).toBe('the service');
      const job = await app.deps.db('jobs').where({ id: task }).first();
      expect(job).toMatchObject({ status: 'succeeded', service_id: 'attest.timestamp' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 90_000);
});
