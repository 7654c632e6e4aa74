// What every `px` command is given: the parsed options, the key file, the client (made on first use),
// and the helpers that read options, print the answer and turn a refusal into one line. Everything a
// run reads comes from its Io (argv, the variables, the output streams): nothing of the process.
import { writeFileSync } from 'node:fs';
import type { parseArgs } from 'node:util';
import type { Env } from '../../shared/platform/env';
import { serviceUrl } from '../../shared/platform/env';
import { printable, printableJson } from '../../shared/platform/text';
import type { Decision } from '../client/crypto';
import { problemLine, pxClient } from '../client/http';
import type { PxClient } from '../client/http';
import type { Io, Output } from '../io';
import { KeyFile, defaultKeyFile } from '../keyfile';

export type { Io, Output } from '../io';

/**
 * What only some commands need, loaded when one runs: identity files bring the zero-knowledge
 * libraries (Poseidon, hundreds of ms to load), which a wallet, room or treasury command never uses.
 */
export const memberFiles = () => import('../member');

/** A mistake in the command itself: the line, then a pointer to --help, and exit 2. */
export class UsageError extends Error {}

export const options = {
  keys: { type: 'string' },
  url: { type: 'string' },
  token: { type: 'string' },
  field: { type: 'string', multiple: true },
  out: { type: 'string' },
  timeout: { type: 'string' },
  wallet: { type: 'string' },
  member: { type: 'string', multiple: true },
  name: { type: 'string' },
  slug: { type: 'string' },
  threshold: { type: 'string' },
  organization: { type: 'string' },
  email: { type: 'string' },
  identity: { type: 'string', multiple: true },
  trustee: { type: 'string', multiple: true },
  commitment: { type: 'string', multiple: true },
  room: { type: 'string' },
  title: { type: 'string' },
  option: { type: 'string', multiple: true },
  committee: { type: 'string' },
  'voting-seconds': { type: 'string' },
  'voting-ends-at': { type: 'string' },
  quorum: { type: 'string' },
  wait: { type: 'string' },
  decision: { type: 'string' },
  evidence: { type: 'string' },
  'evidence-file': { type: 'string' },
  asset: { type: 'string' },
  'period-seconds': { type: 'string' },
  limit: { type: 'string' },
  operation: { type: 'string' },
  amount: { type: 'string' },
  recipient: { type: 'string' },
  purpose: { type: 'string' },
  pricing: { type: 'string' },
  reserve: { type: 'string' },
  'unrevealed-deposit': { type: 'string' },
  'reveal-by': { type: 'string' },
  'bidding-seconds': { type: 'string' },
  'reveal-seconds': { type: 'string' },
  deposit: { type: 'string' },
  template: { type: 'string' },
  stage: { type: 'string' },
  action: { type: 'string' },
  actor: { type: 'string' },
  subject: { type: 'string' },
  param: { type: 'string', multiple: true },
  /** workflow prepare: publish a credential stage's parameters in plain (where its template allows). */
  'plain-parameters': { type: 'boolean' },
  credential: { type: 'string' },
  'require-credential': { type: 'string' },
  prepared: { type: 'string' },
  publication: { type: 'string' },
  'valid-from': { type: 'string' },
  'valid-until': { type: 'string' },
  from: { type: 'string' },
  help: { type: 'boolean' },
} as const;

export type Values = ReturnType<
  typeof parseArgs<{ options: typeof options; allowPositionals: true }>
>['values'];

type Answer<T> = Promise<{ data?: T; error?: unknown; response: Response }>;

/** One run of one command: what it was given and the helpers its handler uses. */
export interface Context {
  values: Values;
  /** The positional after the command's two words (a NAME, a ROOM, a FILE …), if any. */
  id: string | undefined;
  keys: KeyFile;
  /** --wait's limit, in ms (--timeout, default 600 s). */
  timeoutMs: number;
  /** The client, made on first use (so a command that calls nothing needs no credential). */
  px(): PxClient;
  /** A required option's value, or a UsageError naming it. */
  need(name: keyof Values): string;
  /** The positional, or a UsageError saying what it is. */
  needId(what: string): string;
  /** Refuses a positional the command takes none of. */
  noId(): void;
  /** Prints the answer (--field, --out). */
  out(value: unknown): void;
  /** The answer's data, or the refusal as one line. */
  call<T>(p: Answer<T>): Promise<T>;
  /** --identity files' commitments and --commitment values; at least one. */
  commitments(): Promise<string[]>;
  /** --member values as addresses (a wallet name of the key file, or an address). */
  members(): string[];
}

/** A command of the table: its two words, its lines of the usage, and what it does. */
export interface Command {
  name: string;
  /** Its lines of the usage (several commands may share one, given by the first). */
  usage?: string;
  run(c: Context): Promise<void> | void;
}

export const int = (v: string | undefined, name: string): number | undefined => {
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v)) throw new UsageError(`--${name} is a whole number`);
  return Number(v);
};

export const decisionOf = (v: string | undefined): Decision => {
  if (v !== 'approve' && v !== 'reject') throw new UsageError('--decision is approve or reject');
  return v;
};

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Prints the answer; with `fields`, only those (a string as is), several on one line separated by
 * spaces; with `out`, writes the whole answer there (and prints only the fields asked for).
 */
function print(stdout: Output, value: unknown, fields: string[] | undefined, out: string | undefined): void {
  if (out) writeFileSync(out, `${JSON.stringify(value, null, 2)}\n`);
  // What the service stored reaches the terminal escaped (shared/platform/text.ts); the file keeps it.
  if (!fields?.length) {
    if (!out)
      stdout.write(
        typeof value === 'string' ? `${printable(value, { lines: true })}\n` : `${printableJson(value, 2)}\n`,
      );
    return;
  }
  const picked = fields.map((field) => {
    let v = value;
    for (const part of field.split('.')) v = (v as Record<string, unknown> | undefined)?.[part];
    if (v === undefined) throw new Error(`the answer has no ${field}`);
    return typeof v === 'string'
      ? printable(v, { lines: true })
      : printableJson(v, fields.length > 1 ? undefined : 2);
  });
  stdout.write(`${picked.join(' ')}\n`);
}

/**
 * The context of one run: the key file (--keys, else PX_KEYS, else the default), the service (--url,
 * else serviceUrl of the settings), the credential (--token, else the kept license, else
 * OPERATOR_TOKEN).
 */
export function makeContext(
  io: Io,
  settings: Env,
  values: Values,
  group: string,
  verb: string | undefined,
  id: string | undefined,
): Context {
  const keys = new KeyFile(values.keys ?? settings.PX_KEYS ?? defaultKeyFile());
  const url = values.url ?? serviceUrl(settings);
  let client: PxClient | undefined;
  const px = (): PxClient =>
    (client ??= pxClient({
      url,
      token: values.token ?? keys.license?.token ?? settings.OPERATOR_TOKEN,
      ...(io.fetch ? { fetch: io.fetch } : {}),
    }));
  const timeoutMs = (int(values.timeout, 'timeout') ?? 600) * 1000;

  async function call<T>(p: Answer<T>): Promise<T> {
    let r: Awaited<Answer<T>>;
    try {
      r = await p;
    } catch (err) {
      const c = (err as { cause?: { code?: string; message?: string } }).cause;
      const cause = c?.code ?? c?.message ?? (err as Error).message;
      throw new Error(`the service does not answer at ${url} (${cause})`);
    }
    if (!r.response.ok) throw new Error(problemLine(r.response.status, r.error));
    return r.data as T;
  }

  return {
    values,
    id,
    keys,
    timeoutMs,
    px,
    call,
    need: (name) => {
      const v = values[name];
      if (typeof v !== 'string' || !v) throw new UsageError(`${group} ${verb ?? ''} needs --${name}`);
      return v;
    },
    needId: (what) => {
      if (!id) throw new UsageError(`${group} ${verb} needs ${what}`);
      return id;
    },
    noId: () => {
      if (id) throw new UsageError(`unexpected ${id}`);
    },
    out: (v) => print(io.stdout, v, values.field, values.out),
    commitments: async () => {
      const fromFiles = await Promise.all(
        (values.identity ?? []).map(
          async (f) => (await (await memberFiles()).readIdentityFile(f)).commitment,
        ),
      );
      const all = [...fromFiles, ...(values.commitment ?? [])];
      if (!all.length) throw new UsageError(`${group} ${verb} needs --identity FILE or --commitment C`);
      return all;
    },
    members: () => (values.member ?? []).map((m) => keys.address(m)),
  };
}
