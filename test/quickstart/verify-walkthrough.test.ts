// docs/verify.md, literally: `npm start` in this checkout (the test database and Redis prefix, a DATA_DIR
// of its own, no development chain), then every `sh` block of the walkthrough in order, in one shell,
// unedited but for the port: pin the trust root, run a workflow to its package, take its bundle, verify
// it offline, see a changed copy fail, read the checkpoint and tiles. What `npm run verify` prints must
// be what the walkthrough's `text` blocks show (… standing for this log's numbers and hashes).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmStart } from './npm-start';
import type { NpmStart } from './npm-start';

const repo = resolve('.');
const doc = readFileSync(join(repo, 'docs/verify.md'), 'utf8');
const blocks = [...doc.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], body: m[2]! }));

const dataDir = mkdtempSync(join(tmpdir(), 'px-verify-doc-'));
let env: NodeJS.ProcessEnv;
let port: number;
let started: NpmStart | undefined;

beforeAll(async () => {
  // The operator token npm start makes in its DATA_DIR, not the test process's.
  started = await npmStart(dataDir, { drop: ['OPERATOR_TOKEN'], env: { DEVNET: 'off' } });
  ({ env, port } = started);
}, 180_000);

afterAll(async () => {
  await started?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}, 30_000);

/** A line of a `text` block, `…` standing for anything. */
const pattern = (line: string) =>
  new RegExp(
    `^${line
      .split('…')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );

describe('docs/verify.md, run as written', () => {
  it('pins the trust root, verifies a bundle offline, and sees a changed one fail, as the walkthrough shows', async () => {
    // Unedited: the service runs on another port than the default, and the blocks find it through PORT.
    expect(port).not.toBe(3000);
    const script = blocks
      .filter((b) => b.lang === 'sh')
      .map((b) => b.body)
      .join('\n');
    expect(script).not.toContain('localhost:3000');
    const { code, out } = await new Promise<{ code: number | null; out: string }>((done) => {
      execFile(
        'bash',
        ['-euo', 'pipefail', '-c', script],
        { cwd: repo, env, encoding: 'utf8', timeout: 150_000 },
        (err, stdout, stderr) =>
          done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
      );
    });
    expect(code, out).toBe(0);

    // Each event answered 200.
    for (const line of [
      'application attach_evidence',
      'application submit',
      'due_diligence approve',
      'security_review approve',
      'approval approve',
    ])
      expect(out).toContain(`${line}: 200`);
    // What `npm run verify` printed, in order, is what the walkthrough's text blocks show.
    const shown = blocks
      .filter((b) => b.lang === 'text')
      .flatMap((b) => b.body.trimEnd().split('\n'))
      .filter((l) => /^(valid|INVALID|exit) /.test(l) || /^(valid|INVALID):/.test(l));
    const printed = out.split('\n').filter((l) => /^(valid|INVALID): |^exit \d/.test(l));
    expect(printed).toHaveLength(shown.length);
    printed.forEach((l, i) => expect(l).toMatch(pattern(shown[i]!)));
    // The proof is a tlog proof, the checkpoint a signed note of the log, the tile its leaf hashes.
    expect(out).toContain('c2sp.org/tlog-proof@v1\nextra ');
    expect(out).toMatch(/^localhost\/log\n\d+\n[A-Za-z0-9+/]{43}=\n\n\u2014 localhost\/log /m);
    const counts = out
      .split('\n')
      .filter((l) => /^\s*\d+$/.test(l))
      .map(Number);
    expect(counts.some((n) => n > 0 && n % 32 === 0)).toBe(true);
    // The first entry: a circuit's ceremony transcript, which the web logs when it starts.
    expect(out).toMatch(
      /^\{"id":"[a-z]+\/[0-9a-f]{64}","kind":"ceremony_transcript","sha256":"[0-9a-f]{64}"/m,
    );
  }, 180_000);
});
