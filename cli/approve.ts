// The approver's command line for anonymous workflow approvals; everything secret stays on this machine.
//   npm run approve -- identity --out me.json
//   npm run approve -- prove --url https://… --proof prf_… --stage approval --identity me.json [--out approval.json]
//   npm run approve -- submit --url https://… --approval approval.json
//   npm run approve -- approve --url https://… --proof prf_… --stage approval --identity me.json
// Imports the approver's client, and of the configuration only where the service answers (--url, else
// PX_URL, else BASE_URL, else this machine's PORT).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { serviceUrl } from '../shared/platform/env';
import {
  fetchApprovalTarget,
  loadMembershipArtifacts,
  makeApproval,
  submitApproval,
} from '../shared/workflows/approval-client';
import type { Approval } from '../shared/workflows/approval-client';
import { newIdentity, output, printJson, readIdentityFile, requireOption } from './member';

const usage = `usage:
  npm run approve -- identity [--out FILE]
      Makes an identity. Keep the file (its secret is your approvals' key); give the organization only
      the commitment it prints, for the approver set of the stages you approve.
  npm run approve -- prove [--url URL] --proof PROOF_ID --stage KEY --identity FILE [--artifacts DIR] [--out FILE]
      Fetches the stage's approval target (scope, content, the set's whole member list) and proves here.
  npm run approve -- submit [--url URL] --approval FILE
  npm run approve -- approve [--url URL] --proof PROOF_ID --stage KEY --identity FILE [--artifacts DIR]
      Proves and submits in one step; prints the recorded stage.
--artifacts reads ballot.wasm and ballot.zkey from a folder instead of the service.
--url defaults to PX_URL, else BASE_URL, else http://127.0.0.1:PORT.`;

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: 'string' },
    url: { type: 'string' },
    proof: { type: 'string' },
    stage: { type: 'string' },
    identity: { type: 'string' },
    artifacts: { type: 'string' },
    approval: { type: 'string' },
    help: { type: 'boolean' },
  },
});

const need = (name: keyof typeof values): string => requireOption(values, name, usage);

async function prove(): Promise<Approval> {
  const url = values.url ?? serviceUrl();
  const [identity, target] = await Promise.all([
    readIdentityFile(need('identity')),
    fetchApprovalTarget(url, need('proof'), need('stage')),
  ]);
  const artifacts = await loadMembershipArtifacts(values.artifacts ?? url);
  const { timings: _t, ...approval } = await makeApproval({ identity, target, artifacts });
  return approval;
}

async function main(): Promise<void> {
  const command = positionals[0];
  if (values.help || !command) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  switch (command) {
    case 'identity':
      return newIdentity(values.out);
    case 'prove': {
      const approval = await prove();
      return output(values.out, approval);
    }
    case 'approve':
    case 'submit': {
      const approval =
        command === 'approve'
          ? await prove()
          : (JSON.parse(readFileSync(need('approval'), 'utf8')) as Approval);
      const res = await submitApproval(values.url ?? serviceUrl(), approval);
      if (res.status !== 200)
        throw new Error(`refused (${res.status}): ${String(res.body.code)}: ${String(res.body.detail)}`);
      printJson(res.body);
      return;
    }
    default:
      throw new Error(`unknown command ${command}\n\n${usage}`);
  }
}

main()
  .catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  })
  .finally(() => (globalThis as { curve_bn128?: { terminate(): Promise<void> } }).curve_bn128?.terminate());
