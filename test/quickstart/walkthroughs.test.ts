// The walkthroughs of docs/governance.md, docs/treasury.md, docs/auctions.md, docs/workflows.md,
// docs/credentials.md and docs/verify.md, literally, on one instance, by three readers at once (each runs on whatever the others
// left): `npm start` in this checkout (the test database and Redis prefix, a DATA_DIR of its own, no
// development chain) on a port that is not the default, then every `sh` block of a doc's "Walkthrough"
// section in order, in one shell, unedited: only curl, `npm run px` (and the clients it runs) and
// `npm run verify` (its output and errors taken as one stream, as a terminal shows them). Each walkthrough claims its organization's own TRIAL license from this machine's one
// address, so the server takes more than the default three a day (the docs say so).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { npmStart } from './npm-start';
import type { NpmStart } from './npm-start';

const repo = resolve('.');
const verifyDoc = readFileSync(join(repo, 'docs/verify.md'), 'utf8');
const verifyBlocks = [...verifyDoc.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({
  lang: m[1],
  body: m[2]!,
}));

/** A line of a `text` block, `…` standing for anything. */
const pattern = (line: string) =>
  new RegExp(
    `^${line
      .split('…')
      .map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );

/** The `sh` blocks of a doc's "## Walkthrough" section, in order. */
export function walkthrough(doc: string): string[] {
  const text = readFileSync(join(repo, doc), 'utf8');
  const start = text.indexOf('\n## Walkthrough\n');
  if (start < 0) throw new Error(`${doc} has no Walkthrough section`);
  const end = text.indexOf('\n## ', start + 1);
  const section = text.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

const dataDir = mkdtempSync(join(tmpdir(), 'px-walkthroughs-'));
let env: NodeJS.ProcessEnv;
let port: number;
let started: NpmStart | undefined;

beforeAll(async () => {
  // Nothing of the test process's operator token or client settings: the blocks set PX_URL and
  // PX_KEYS themselves; each walkthrough claims a TRIAL from this one address.
  started = await npmStart(dataDir, {
    drop: ['OPERATOR_TOKEN', 'PX_URL', 'PX_KEYS'],
    env: { DEVNET: 'off' },
  });
  ({ env, port } = started);
}, 180_000);

afterAll(async () => {
  await started?.stop();
  rmSync(dataDir, { recursive: true, force: true });
}, 30_000);

/** Runs a doc's walkthrough as one shell script; its exit code and everything it printed. */
async function runWalkthrough(doc: string, timeout = 280_000): Promise<{ code: number | null; out: string }> {
  expect(port).not.toBe(3000);
  const script = walkthrough(doc).join('\n');
  expect(script).not.toContain('localhost:3000');
  // One stream, in the order a terminal shows it: a refusal's line right before the `exit` it caused.
  // --norc: a bash whose stdin is a socket (Node's pipes are) reads /etc/bash.bashrc when SHLVL is 0,
  // whose PS1 test fails under -u, a line at the end of what it printed.
  const merged = `exec 2>&1\n${script}`;
  return new Promise((done) => {
    execFile(
      'bash',
      ['--norc', '-euo', 'pipefail', '-c', merged],
      { cwd: repo, env, encoding: 'utf8', timeout, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) =>
        done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

// Two readers at once, each following docs in turn: the windows the docs wait out (a vote, an auction's
// bidding and reveal) overlap instead of adding up.
describe('the walkthroughs, run as written, two readers at once', () => {
  describe.concurrent('one reader: governance, then treasury', () => {
    it.sequential(
      'docs/governance.md: a room, identities, a reviewed proposal, anonymous ballots, the tally, the bundle verified',
      async () => {
        const { code, out } = await runWalkthrough('docs/governance.md');
        expect(code, out).toBe(0);
        expect(out).toContain('"member": true');
        expect(out).toContain('"status": "voting"');
        // The second ballot of one identity is refused, in one line, with a non-zero exit.
        expect(out).toMatch(/already_voted.*\nexit 1/);
        expect(out).toMatch(/"outcome": "passed"[\s\S]*"winner": "yes"/);
        expect(out).toMatch(/"tally": \{[^}]*"yes": 2[,\s]/);
        expect(out).toMatch(/"tally": \{[^}]*"no": 1[,\s]/);
        expect(out).toMatch(/^valid: /m);
        expect(out).not.toContain('INVALID');
        // No secret reached the terminal: the key file's seeds and license key.
        expect(out).not.toMatch(/lk_[A-Za-z0-9_-]{20}/);
      },
      300_000,
    );

    it.sequential(
      'docs/treasury.md: a limit, a request over it refused, two of three signers approve, the bundle verified',
      async () => {
        const { code, out } = await runWalkthrough('docs/treasury.md');
        expect(code, out).toBe(0);
        expect(out).toMatch(/refused \(422 spending_limit_exceeded\): .*\nexit 1/);
        expect(out).toMatch(/"status": "approved"/);
        expect(out).toMatch(/refused \(409 request_decided\): .*\nexit 1/);
        expect(out).toMatch(/^approved$/m);
        expect(out).toMatch(/^valid: /m);
        expect(out).not.toContain('INVALID');
        expect(out).not.toMatch(/lk_[A-Za-z0-9_-]{20}/);
      },
      300_000,
    );
  });

  describe.concurrent('a third: credentials', () => {
    it.sequential(
      'docs/credentials.md: a bureau’s credit report proven at Risk Assessment, every refusal in one line, anonymous approvals, the bundle verified',
      async () => {
        const { code, out } = await runWalkthrough('docs/credentials.md', 600_000);
        expect(code, out).toBe(0);
        for (const refusal of [
          'refused (409 credential_issuer_not_accepted)',
          'refused (409 policy_parameters_mismatch)',
          'refused (422 credential_expired)',
          'refused (422 credential_revoked)',
        ])
          expect(out).toContain(`${refusal}`);
        expect(out.match(/\nexit 1\n/g)?.length).toBeGreaterThanOrEqual(5);
        expect(out).toMatch(/^risk_assessment in_progress$/m);
        expect(out).toMatch(/^completed$/m);
        expect(out).toMatch(
          /^valid: package: workflow Underwriting: .*approvals proven.*stage risk_assessment: a credit report signed by Acme Credit Bureau .*shows score ≥ a value the organization fixed, debtToIncome ≤ a value the organization fixed; .*: proven$/m,
        );
        // The approvals: each by an underwriter of the directory, proven inside the approval.
        expect(out).toMatch(
          /approval 2 members, each holding a staff-role credential showing role = underwriter \(from Example Lender staff directory\)/,
        );
        expect(out).toMatch(/must each hold a staff-role credential: give it with --credential FILE\nexit 1/);
        expect(out).toMatch(
          /^valid: the bundle's verification key of approval is the one this verifier holds/m,
        );
        expect(out).toMatch(/^valid: the acceptance of issuer Acme Credit Bureau .* is in the log/m);
        expect(out).toMatch(/^valid: revocation root 2 of issuer Acme Credit Bureau is in the log/m);
        expect(out).toMatch(
          /^valid: the bundle's verification key of credential is the one this verifier holds/m,
        );
        // The changed bundle fails, and says where.
        expect(out).toMatch(/^INVALID: .*\(it was changed\)\nexit 1$/m);
        // The trust root lists the bureau; once the lender revokes its key from before the proof, the
        // unchanged bundle fails offline against a trust root fetched since.
        expect(out).toMatch(/^true\n2026-01-01T00:00:00.000Z$/m);
        expect(out).toMatch(
          /^INVALID: credential \(stage risk_assessment\): your trust root has the issuer key revoked from 2026-01-01T00:00:00.000Z, before the proof’s time$/m,
        );
        expect(out.trimEnd()).toMatch(/\nexit 1$/);
        // The bureau's and the lender's secrets never reached the terminal.
        expect(out).not.toMatch(/"privateKey"/);
        expect(out).not.toMatch(/lk_[A-Za-z0-9_-]{20}/);
      },
      620_000,
    );
  });

  describe.concurrent('another: auctions, then workflows, then verify', () => {
    it.sequential(
      'docs/auctions.md: sealed bids, an early reveal refused, reveals, second price to the highest bidder, the bundle verified',
      async () => {
        const { code, out } = await runWalkthrough('docs/auctions.md');
        expect(code, out).toBe(0);
        expect(out).toMatch(/refused \(409 reveal_not_open\): .*\nexit 1/);
        expect(out).toMatch(/^reveal$/m);
        const bea = out.trimEnd().split('\n').at(-1)!;
        expect(bea).toMatch(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/);
        expect(out).toContain(`"winner": "${bea}"`);
        expect(out).toContain('"price": "1800000"');
        expect(out).toMatch(/^valid: /m);
        expect(out).not.toContain('INVALID');
      },
      300_000,
    );

    it.sequential(
      'docs/workflows.md: events with actor commitments, a bare approval refused, an anonymous approval, the bundle verified',
      async () => {
        const { code, out } = await runWalkthrough('docs/workflows.md');
        expect(code, out).toBe(0);
        expect(out).toMatch(/^security_review completed$/m);
        expect(out).toMatch(/refused \(409 approval_proof_required\): .*\nexit 1/);
        expect(out).toMatch(/"workflowStatus": "completed"/);
        expect(out).toMatch(/^completed$/m);
        expect(out).toMatch(/^valid: /m);
        expect(out).not.toContain('INVALID');
      },
      300_000,
    );

    it.sequential(
      'docs/verify.md: pins the trust root, verifies a bundle offline, and sees a changed one fail, as the walkthrough shows',
      async () => {
        // Unedited: the service runs on another port than the default, and the blocks find it through PORT.
        expect(port).not.toBe(3000);
        const script = verifyBlocks
          .filter((b) => b.lang === 'sh')
          .map((b) => b.body)
          .join('\n');
        expect(script).not.toContain('localhost:3000');
        const { code, out } = await new Promise<{ code: number | null; out: string }>((done) => {
          execFile(
            'bash',
            ['--norc', '-euo', 'pipefail', '-c', script],
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
        const shown = verifyBlocks
          .filter((b) => b.lang === 'text')
          .flatMap((b) => b.body.trimEnd().split('\n'))
          .filter((l) => /^(valid|INVALID|WARNING|exit) /.test(l) || /^(valid|INVALID|WARNING):/.test(l));
        const printed = out.split('\n').filter((l) => /^(valid|INVALID|WARNING): |^exit \d/.test(l));
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
      },
      180_000,
    );
  });
});
