// What a database dump holds, as text, and every form in which a secret found there could still be used;
// plus a loopback receiver that keeps what each delivery carried.
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { Db } from '../../shared/platform/db/knex';

/**
 * Every row of every table of the public schema as JSON (bytea as hex), and, where `pg_dump` of the
 * server's major version is installed, its plain-text dump of the whole database too.
 */
export async function dumpText(db: Db, url: string): Promise<string> {
  const tables = (await db('pg_tables').where({ schemaname: 'public' }).pluck('tablename')) as string[];
  const parts: string[] = [];
  for (const table of tables) {
    const { rows } = await db.raw(`select row_to_json(t)::text as j from "${table}" t`);
    parts.push(`-- ${table}`, ...(rows as Array<{ j: string }>).map((r) => r.j));
  }
  try {
    const { stdout } = await promisify(execFile)('pg_dump', ['--no-owner', '--no-privileges', url], {
      maxBuffer: 256 * 1024 * 1024,
    });
    parts.push(stdout);
  } catch {
    // No pg_dump here, or one of another major version: the rows above are every value there is.
  }
  return parts.join('\n');
}

const PREFIX = /^(whsec|ak|lk|jt|cs|gs)_/;

/**
 * A secret as given, without its well-known prefix, in hex, base64 and base64url, and the random bytes a
 * base64url secret spells (as hex and base64, as a bytea column would show them): any of these in a dump
 * would let its reader use the secret.
 */
export function usableForms(value: string): string[] {
  const forms = new Set<string>([value]);
  const tail = value.replace(PREFIX, '');
  for (const v of [value, tail]) {
    forms.add(v);
    const bytes = Buffer.from(v);
    forms.add(bytes.toString('hex'));
    forms.add(bytes.toString('base64'));
    forms.add(bytes.toString('base64url'));
  }
  if (/^[A-Za-z0-9_-]{16,}$/.test(tail)) {
    const raw = Buffer.from(tail, 'base64url');
    forms.add(raw.toString('hex'));
    forms.add(raw.toString('base64'));
  }
  // Too short a form would match by chance.
  return [...forms].filter((f) => f.length >= 10);
}

export interface Received {
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
}

/** A loopback HTTP receiver answering 204 and keeping every request. */
export async function receiver(path = '/hook') {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      received.push({ path: req.url ?? '', headers: req.headers, raw });
      res.statusCode = 204;
      res.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    received,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
