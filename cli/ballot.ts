// The voter's command line for anonymous ballots; everything secret stays on this machine.
//   npm run ballot -- identity --out me.json
//   npm run ballot -- vote --url https://… --proposal prop_… --identity me.json --choice yes
//   npm run ballot -- make --url https://… --proposal prop_… --identity me.json --choice yes --out ballot.json
//   npm run ballot -- submit --url https://… --proposal prop_… --ballot ballot.json
// Imports the voter's client only: no service configuration is read.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import {
  createIdentity,
  fetchBallotInfo,
  identityFromSecret,
  loadBallotArtifacts,
  makeBallot,
  submitBallot,
} from '../shared/governance/ballot-client';
import type { Ballot, Identity } from '../shared/governance/ballot-client';

const usage = `usage:
  npm run ballot -- identity [--out FILE]
      Makes an identity. Keep the file (its secret is your vote's key); give the room's administrator
      the commitment it prints, or register it with your wallet.
  npm run ballot -- vote --url URL --proposal ID --identity FILE --choice OPTION [--artifacts DIR]
      Fetches the proposal key and the room's member list, proves and encrypts here, submits, prints
      the signed receipt.
  npm run ballot -- make --url URL --proposal ID --identity FILE --choice OPTION [--artifacts DIR] [--out FILE]
  npm run ballot -- submit --url URL --proposal ID --ballot FILE
      The same in two steps (make offline, submit from another network path).
--artifacts reads ballot.wasm and ballot.zkey from a folder instead of the service.`;

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: 'string' },
    url: { type: 'string' },
    proposal: { type: 'string' },
    identity: { type: 'string' },
    choice: { type: 'string' },
    artifacts: { type: 'string' },
    ballot: { type: 'string' },
    help: { type: 'boolean' },
  },
});

const print = (value: unknown) => process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);

function need(name: keyof typeof values): string {
  const v = values[name];
  if (typeof v !== 'string' || !v) throw new Error(`--${name} is required.\n\n${usage}`);
  return v;
}

async function readIdentity(path: string): Promise<Identity> {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as { secret?: unknown };
  if (typeof raw.secret !== 'string') throw new Error(`${path} holds no identity secret.`);
  return identityFromSecret(raw.secret);
}

async function make(): Promise<Ballot> {
  const url = need('url');
  const proposalId = need('proposal');
  const [identity, info] = await Promise.all([
    readIdentity(need('identity')),
    fetchBallotInfo(url, proposalId),
  ]);
  const artifacts = await loadBallotArtifacts(values.artifacts ?? url);
  const { timings: _t, ...ballot } = await makeBallot({ identity, info, choice: need('choice'), artifacts });
  return ballot;
}

async function main(): Promise<void> {
  const command = positionals[0];
  if (values.help || !command) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  switch (command) {
    case 'identity': {
      const identity = await createIdentity();
      if (values.out) {
        if (existsSync(values.out)) throw new Error(`${values.out} exists; not overwriting an identity.`);
        writeFileSync(values.out, `${JSON.stringify(identity, null, 2)}\n`, { mode: 0o600 });
      } else print(identity);
      process.stderr.write(`identity commitment (give this, never the secret): ${identity.commitment}\n`);
      return;
    }
    case 'make': {
      const ballot = await make();
      if (values.out) writeFileSync(values.out, `${JSON.stringify(ballot)}\n`);
      else print(ballot);
      return;
    }
    case 'vote':
    case 'submit': {
      const ballot =
        command === 'vote' ? await make() : (JSON.parse(readFileSync(need('ballot'), 'utf8')) as Ballot);
      const res = await submitBallot(need('url'), need('proposal'), ballot);
      if (res.status !== 201)
        throw new Error(`refused (${res.status}): ${String(res.body.code)}: ${String(res.body.detail)}`);
      print(res.body);
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
