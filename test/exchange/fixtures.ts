// Fixtures for the agent exchange tests: agents with real ed25519 wallets, registered over HTTP.
import { randomBytes } from 'node:crypto';
import bs58 from 'bs58';
import { expect } from 'vitest';
import { signingKeyFromSeed } from '../../shared/platform/crypto';
import type { TestApp } from '../helpers';

export interface Wallet {
  publicKey: string;
  sign(message: string): string;
}

/** An ed25519 wallet that prints keys and signatures in base58, as Solana wallets do. */
export function newWallet(): Wallet {
  const key = signingKeyFromSeed(randomBytes(32));
  return {
    publicKey: bs58.encode(Buffer.from(key.publicKey, 'base64url')),
    sign: (message) => bs58.encode(Buffer.from(key.sign(message), 'base64url')),
  };
}

export interface TestAgent {
  id: string;
  apiKey: string;
  wallet: Wallet;
  auth: { Authorization: string };
}

/** Registers an agent with a fresh wallet; `from`: the client address it registers from (one proxy hop). */
export async function registerAgent(
  app: TestApp,
  fields: Partial<{
    name: string;
    description: string;
    capabilities: string[];
    tags: string[];
    endpointUrl: string;
  }> = {},
  from?: string,
): Promise<TestAgent> {
  const wallet = newWallet();
  // Imported here: a suite that sets its environment before loading the app imports this file first.
  const request = from ? (await import('../helpers')).behindProxy(app) : app.request;
  const res = await request
    .post('/api/registry/register')
    .set(from ? { 'X-Forwarded-For': from } : {})
    .send({ name: 'agent', ...fields, walletPublicKey: wallet.publicKey })
    .expect(201);
  return {
    id: res.body.agent.id,
    apiKey: res.body.apiKey,
    wallet,
    auth: { Authorization: `Bearer ${res.body.apiKey}` },
  };
}

export function expectProblem(
  res: { status: number; headers: Record<string, string>; body: Record<string, unknown> },
  status: number,
  code: string,
) {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.body).toMatchObject({ status, code });
}

/** Follows nextCursor to the end, returning every page's ids. */
export async function allPages(
  app: TestApp,
  path: string,
  key: 'agents' | 'listings',
  limit: number,
  startCursor: string | null = null,
): Promise<string[][]> {
  const pages: string[][] = [];
  let cursor: string | null = startCursor;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const url: string = `${path}${sep}limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await app.request.get(url).expect(200);
    pages.push((res.body[key] as Array<{ id: string }>).map((x) => x.id));
    cursor = res.body.nextCursor as string | null;
  } while (cursor);
  return pages;
}
