// A trustee's command line: its keys, its part in a room's key ceremony, and its partial decryptions of
// a closed vote. The secret, the shares it dealt and the share it holds stay in its file on this machine.
//   npm run trustee -- keys --out trustee.json
//   npm run trustee -- ceremony --room room_… --key trustee.json
//   npm run trustee -- decrypt --proposal prop_… --key trustee.json
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { serviceUrl } from '../shared/platform/env';
import {
  ceremonyRound,
  decryptAuction,
  decryptVote,
  fetchCeremony,
  keyFingerprint,
  newTrusteeFile,
  trusteePublicKeys,
} from '../shared/governance/trustee-client';
import type { TrusteeFile } from '../shared/governance/trustee-client';
import { printJson, requireOption } from './member';
import { unreachableLine } from './io';

const usage = `usage:
  npm run trustee -- keys --out FILE
      Makes this trustee's keys. Keep the file (mode 0600): it is the only copy of your secret. Give the
      room's administrator the public keys it prints (publicKey, encryptionKey), nothing else.
  npm run trustee -- ceremony [--url URL] --room ID --key FILE
      Does what is due in the room's key ceremony: deals (once), judges every dealing (your share against
      its dealer's commitments: a mismatch is a complaint), answers complaints against your dealing.
      Run it again until it prints status "ready". Writes what you dealt into FILE (needed to answer).
  npm run trustee -- status [--url URL] --room ID
      Prints the ceremony: who has dealt and judged, pending complaints, the joint key once ready.
  npm run trustee -- decrypt [--url URL] --proposal ID --key FILE
      After the vote's close only: your partial decryption of every ballot, each with its proof.
  npm run trustee -- decrypt-auction [--url URL] --auction ID --key FILE
      After a sealed auction's reveal window only: your partial decryption of every bid's sealed opening.
--url defaults to PX_URL, else BASE_URL, else http://127.0.0.1:PORT.`;

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: 'string' },
    url: { type: 'string' },
    room: { type: 'string' },
    proposal: { type: 'string' },
    auction: { type: 'string' },
    key: { type: 'string' },
    help: { type: 'boolean' },
  },
});

const need = (name: keyof typeof values): string => requireOption(values, name, usage);
const url = (): string => values.url ?? serviceUrl();

function readKeyFile(path: string): TrusteeFile {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as Partial<TrusteeFile>;
  if (typeof raw.secret !== 'string') throw new Error(`${path} holds no trustee secret.`);
  return raw as TrusteeFile;
}

async function main(): Promise<void> {
  const command = positionals[0];
  if (values.help || !command) {
    process.stdout.write(`${usage}\n`);
    return;
  }
  switch (command) {
    case 'keys': {
      const out = need('out');
      if (existsSync(out)) throw new Error(`${out} exists; not overwriting a trustee's keys.`);
      const file = newTrusteeFile();
      writeFileSync(out, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
      const keys = trusteePublicKeys(file);
      printJson(process.stdout, { ...keys, fingerprint: keyFingerprint(keys) });
      return;
    }
    case 'ceremony': {
      const path = need('key');
      const { did, ceremony, file } = await ceremonyRound(url(), need('room'), readKeyFile(path));
      writeFileSync(path, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
      printJson(process.stdout, {
        did,
        status: ceremony.status,
        dealt: ceremony.dealings.map((d) => d.trustee),
        pendingComplaints: ceremony.pendingComplaints,
        jointKey: ceremony.jointKey,
      });
      return;
    }
    case 'status':
      printJson(process.stdout, await fetchCeremony(url(), need('room')));
      return;
    case 'decrypt':
      printJson(process.stdout, await decryptVote(url(), need('proposal'), readKeyFile(need('key'))));
      return;
    case 'decrypt-auction':
      printJson(process.stdout, await decryptAuction(url(), need('auction'), readKeyFile(need('key'))));
      return;
    default:
      throw new Error(`unknown command ${command}\n\n${usage}`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${unreachableLine(err) ?? (err instanceof Error ? err.message : String(err))}\n`);
  process.exitCode = 1;
});
