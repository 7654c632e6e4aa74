// The approver's command line for anonymous workflow approvals; everything secret stays on this machine.
//   npm run approve -- identity --out me.json
//   npm run approve -- prove --url https://… --proof prf_… --stage approval --identity me.json [--out approval.json]
//   npm run approve -- submit --url https://… --approval approval.json
//   npm run approve -- approve --url https://… --proof prf_… --stage approval --identity me.json
// The service is --url, else PX_URL, else BASE_URL, else this machine's PORT, as the variables it is
// given say. `main(argv, io)` runs in process (`px approve …` calls it); this file is also its command line.
import { localNativeProver } from '../shared/zk/local-prover';
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseEnv, serviceUrl } from '../shared/platform/env';
import { issuerKeyId } from '../shared/credentials/format';
import { AppError } from '../shared/platform/errors';
import {
  fetchApprovalTarget,
  loadCredentialedApprovalArtifacts,
  loadMembershipArtifacts,
  makeApproval,
  makeCredentialedApproval,
  submitApproval,
} from '../shared/workflows/approval-client';
import type { Approval } from '../shared/workflows/approval-client';
import { commandLine } from './io';
import type { Io } from './io';
import { exitCode, newIdentity, output, printJson, readIdentityFile, requireOption } from './member';

const usage = `usage:
  npm run approve -- identity [--out FILE]
      Makes an identity. Keep the file (its secret is your approvals' key); give the organization only
      the commitment it prints, for the approver set of the stages you approve.
  npm run approve -- prove [--url URL] --proof PROOF_ID --stage KEY --identity FILE [--artifacts DIR] [--out FILE]
      Fetches the stage's approval target (scope, content, the set's whole member list) and proves here.
  npm run approve -- submit [--url URL] --approval FILE
  npm run approve -- approve [--url URL] --proof PROOF_ID --stage KEY --identity FILE [--artifacts DIR]
      Proves and submits in one step; prints the recorded stage.
--credential FILE: where the stage's set requires each approver to hold a credential (the approval
      target says what), the credential about your identity's commitment; it is proven inside the
      approval against the issuer's latest published revocations, and never leaves this machine.
--artifacts reads ballot.wasm and ballot.zkey (approval.wasm and approval.zkey for a credentialed
      approval) from a folder instead of the service.
--url defaults to PX_URL, else BASE_URL, else http://127.0.0.1:PORT.`;

const options = {
  out: { type: 'string' },
  url: { type: 'string' },
  proof: { type: 'string' },
  stage: { type: 'string' },
  identity: { type: 'string' },
  artifacts: { type: 'string' },
  approval: { type: 'string' },
  credential: { type: 'string' },
  help: { type: 'boolean' },
} as const;

async function run(argv: string[], io: Io): Promise<void> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options });
  const need = (name: keyof typeof values): string => requireOption(values, name, usage);
  const url = (): string => values.url ?? serviceUrl(parseEnv(io.env));

  async function prove(): Promise<Approval> {
    const [identity, target] = await Promise.all([
      readIdentityFile(need('identity')),
      fetchApprovalTarget(url(), need('proof'), need('stage')),
    ]);
    if (target.credential) {
      if (!values.credential)
        throw new Error(
          `stage ${target.stage}'s approvers must each hold ${target.credential.what}: give it with --credential FILE`,
        );
      const credential = JSON.parse(readFileSync(values.credential, 'utf8')) as {
        proof?: { publicKey?: [string, string] };
      };
      // The issuer's latest revoked nonces, public; the path is made here, so nobody learns which.
      const keyId = issuerKeyId(credential.proof?.publicKey ?? ['0', '0']);
      const res = await fetch(new URL(`/api/proof-workflows/issuers/${keyId}/revocations`, url()), {
        headers: { accept: 'application/json' },
      });
      const nonces = res.status === 404 ? [] : ((await res.json()) as { nonces: string[] }).nonces;
      const artifacts = await loadCredentialedApprovalArtifacts(values.artifacts ?? url());
      try {
        const { timings: _t, ...approval } = await makeCredentialedApproval({
          identity,
          target,
          credential,
          revocation: { revoked: nonces },
          artifacts,
          native: await localNativeProver(artifacts.zkey),
        });
        return approval;
      } catch (err) {
        // What the circuit would refuse, refused here before proving, as the service names it.
        if (err instanceof AppError) throw new Error(`refused (${err.status} ${err.code}): ${err.message}`);
        throw err;
      } finally {
        const { terminateCurves } = await import('../shared/zk/index');
        await terminateCurves();
      }
    }
    const artifacts = await loadMembershipArtifacts(values.artifacts ?? url());
    const { timings: _t, ...approval } = await makeApproval({
      identity,
      target,
      artifacts,
      native: await localNativeProver(artifacts.zkey),
    });
    return approval;
  }

  const command = positionals[0];
  if (values.help || !command) {
    io.stdout.write(`${usage}\n`);
    return;
  }
  switch (command) {
    case 'identity':
      return newIdentity(io, values.out);
    case 'prove': {
      const approval = await prove();
      return output(io.stdout, values.out, approval);
    }
    case 'approve':
    case 'submit': {
      const approval =
        command === 'approve'
          ? await prove()
          : (JSON.parse(readFileSync(need('approval'), 'utf8')) as Approval);
      const res = await submitApproval(url(), approval);
      if (res.status !== 200)
        throw new Error(`refused (${res.status}): ${String(res.body.code)}: ${String(res.body.detail)}`);
      printJson(io.stdout, res.body);
      return;
    }
    default:
      throw new Error(`unknown command ${command}\n\n${usage}`);
  }
}

/** Runs one command line; its exit code (1 for a refusal or a mistake, its message on stderr). */
export const main = (argv: string[], io: Io): Promise<number> => exitCode(io, () => run(argv, io));

// The command line: this process's arguments, variables and streams, and its exit code.
if (import.meta.url === `file://${process.argv[1]}`) await commandLine(main);
