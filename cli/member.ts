// What the members' command-line clients share (`npm run ballot`, `npm run approve`): the identity file,
// whose secret is the member's key (written readable by its owner only, never overwritten), required
// options, and JSON output, written to the streams the run was given.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { printableJson } from '../shared/platform/text';
import { createIdentity, identityFromSecret } from '../shared/zk/anonymity';
import type { Identity } from '../shared/zk/anonymity';
import { unreachableLine } from './io';
import type { Io, Output } from './io';

/** A reply as JSON, what the service stored escaped for the terminal (shared/platform/text.ts). */
export const printJson = (stdout: Output, value: unknown): void => {
  stdout.write(`${printableJson(value, 2)}\n`);
};

/** The value of a required string option, or an error naming it, with the usage. */
export function requireOption(values: Record<string, unknown>, name: string, usage: string): string {
  const v = values[name];
  if (typeof v !== 'string' || !v) throw new Error(`--${name} is required.\n\n${usage}`);
  return v;
}

export async function readIdentityFile(path: string): Promise<Identity> {
  const raw = JSON.parse(readFileSync(path, 'utf8')) as { secret?: unknown };
  if (typeof raw.secret !== 'string') throw new Error(`${path} holds no identity secret.`);
  return identityFromSecret(raw.secret);
}

/** Makes an identity, writes it to `out` (or prints it), and tells the commitment on stderr. */
export async function newIdentity(io: Io, out: string | undefined): Promise<void> {
  const identity = await createIdentity();
  if (out) {
    if (existsSync(out)) throw new Error(`${out} exists; not overwriting an identity.`);
    writeFileSync(out, `${JSON.stringify(identity, null, 2)}\n`, { mode: 0o600 });
  } else printJson(io.stdout, identity);
  io.stderr.write(`identity commitment (give this, never the secret): ${identity.commitment}\n`);
}

/** Writes a made document (a ballot, an approval) to `out`, or prints it. */
export function output(stdout: Output, out: string | undefined, value: unknown): void {
  if (out) writeFileSync(out, `${JSON.stringify(value)}\n`);
  else printJson(stdout, value);
}

/**
 * A member client's run as its main answers it: 0, or 1 with the refusal's one line on stderr (a
 * mistake in the command, too, with the usage).
 */
export async function exitCode(io: Io, run: () => Promise<void>): Promise<number> {
  try {
    await run();
    return 0;
  } catch (err) {
    io.stderr.write(`${unreachableLine(err) ?? (err instanceof Error ? err.message : String(err))}\n`);
    return 1;
  }
}
