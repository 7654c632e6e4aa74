// The voter's command line for anonymous ballots; everything secret stays on this machine.
//   npm run ballot -- identity --out me.json
//   npm run ballot -- vote --url https://… --proposal prop_… --identity me.json --choice yes
//   npm run ballot -- make --url https://… --proposal prop_… --identity me.json --choice yes --out ballot.json
//   npm run ballot -- submit --url https://… --proposal prop_… --ballot ballot.json
// The service is --url, else PX_URL, else BASE_URL, else this machine's PORT, as the variables it is
// given say. `main(argv, io)` runs in process (`px ballot …` calls it); this file is also its command line.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parseEnv, serviceUrl } from '../shared/platform/env';
import {
  assertChoice,
  fetchBallotInfo,
  loadBallotArtifacts,
  makeBallot,
  submitBallot,
} from '../shared/governance/ballot-client';
import type { Ballot } from '../shared/governance/ballot-client';
import { commandLine } from './io';
import type { Io } from './io';
import { exitCode, newIdentity, output, printJson, readIdentityFile, requireOption } from './member';

const usage = `usage:
  npm run ballot -- identity [--out FILE]
      Makes an identity. Keep the file (its secret is your vote's key); give the room's administrator
      the commitment it prints, or register it with your wallet.
  npm run ballot -- options [--url URL] --proposal ID
      Prints the proposal's question and its options: a choice must be exactly one of them.
  npm run ballot -- vote [--url URL] --proposal ID --identity FILE --choice OPTION [--artifacts DIR]
      Fetches the proposal key, its options and the room's member list, refuses a choice that is not
      one of the options, proves and encrypts here, submits, prints the signed receipt.
  npm run ballot -- make [--url URL] --proposal ID --identity FILE --choice OPTION [--artifacts DIR] [--out FILE]
  npm run ballot -- submit [--url URL] --proposal ID --ballot FILE
      The same in two steps (make offline, submit from another network path).
--artifacts reads ballot.wasm and ballot.zkey from a folder instead of the service.
--url defaults to PX_URL, else BASE_URL, else http://127.0.0.1:PORT.`;

const options = {
  out: { type: 'string' },
  url: { type: 'string' },
  proposal: { type: 'string' },
  identity: { type: 'string' },
  choice: { type: 'string' },
  artifacts: { type: 'string' },
  ballot: { type: 'string' },
  help: { type: 'boolean' },
} as const;

async function run(argv: string[], io: Io): Promise<void> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options });
  const need = (name: keyof typeof values): string => requireOption(values, name, usage);
  const url = (): string => values.url ?? serviceUrl(parseEnv(io.env));

  async function make(): Promise<Ballot> {
    const proposalId = need('proposal');
    const choice = need('choice');
    const [identity, info] = await Promise.all([
      readIdentityFile(need('identity')),
      fetchBallotInfo(url(), proposalId),
    ]);
    // Before any proving: a choice that is none of the options would only make a spoiled ballot.
    assertChoice(info, choice);
    const artifacts = await loadBallotArtifacts(values.artifacts ?? url());
    const { timings: _t, ...ballot } = await makeBallot({ identity, info, choice, artifacts });
    return ballot;
  }

  const command = positionals[0];
  if (values.help || !command) {
    io.stdout.write(`${usage}\n`);
    return;
  }
  switch (command) {
    case 'identity':
      return newIdentity(io, values.out);
    case 'options': {
      const res = await fetch(new URL(`/api/governance/proposals/${need('proposal')}`, url()), {
        headers: { accept: 'application/json' },
      });
      const body = (await res.json()) as Record<string, unknown>;
      if (!res.ok) throw new Error(`refused (${res.status}): ${String(body.code)}: ${String(body.detail)}`);
      printJson(io.stdout, { title: body.title, status: body.status, options: body.options });
      return;
    }
    case 'make': {
      const ballot = await make();
      return output(io.stdout, values.out, ballot);
    }
    case 'vote':
    case 'submit': {
      const ballot =
        command === 'vote' ? await make() : (JSON.parse(readFileSync(need('ballot'), 'utf8')) as Ballot);
      const res = await submitBallot(url(), need('proposal'), ballot);
      if (res.status !== 201)
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
