// A stand-in private-payments provider on loopback, for tests and `npm start` without a real one: it
// logs wallets in (ed25519 signature over the service's challenge, redeemed once at the service with a
// request signed under the shared provider secret) and serves demo balances to holders of its
// short-lived tokens. It holds no funds and proves nothing.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import bs58 from 'bs58';
import { sha256Hex } from '../../shared/platform/crypto';
import { verifyWalletSignature } from '../../shared/platform/wallet';
import {
  PROVIDER_SIGNATURE_HEADER,
  parseChallenge,
  signRedemption,
} from '../../shared/providers/payments-login';

export interface StandInOptions {
  /** The service route that redeems an issued challenge once (`POST …/challenge/redeem`). */
  redeemUrl: string;
  /** The secret shared with the service (its PAYMENTS_PROVIDER_SECRET): redemptions are signed with it. */
  providerSecret: string;
  host?: string;
  /** 0: any free port. */
  port?: number;
  /** A challenge whose Timestamp is older than this is refused before the service is asked. */
  challengeTtlSeconds?: number;
  tokenTtlSeconds?: number;
  /** Milliseconds since the epoch; tests move it forward to expire tokens. */
  clock?: () => number;
  /** One call to the service waits this long. */
  timeoutMs?: number;
}

export interface StandInProvider {
  url: string;
  /** Requests answered per route, so a caller can tell whether a request reached the provider. */
  served: { login: number; balances: number };
  close(): Promise<void>;
}

export const STANDIN_NAME = 'proof-exchange stand-in provider';
const DEMO_NOTE = 'Demo value from the local stand-in provider; no funds exist behind it.';
const LOGIN_BODY_LIMIT = 16 * 1024;
// Challenges may be stamped slightly ahead of this clock by another process's clock.
const CLOCK_SKEW_MS = 30_000;

const is32Bytes58 = (s: string) => {
  try {
    return bs58.decode(s).length === 32;
  } catch {
    return false;
  }
};

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    detail: string,
  ) {
    super(detail);
  }
}

/**
 * Tokens are `<payload>.<mac>`: payload = base64url JSON { wallet, exp (ms), jti }, mac = HMAC-SHA256
 * under a key made at start, so a token outlives neither its expiry nor the process, and any change
 * to it is detected.
 */
function tokenIssuer(clock: () => number, ttlSeconds: number) {
  const key = randomBytes(32);
  const mac = (payload: string) => createHmac('sha256', key).update(payload).digest('base64url');
  return {
    issue(wallet: string) {
      const exp = clock() + ttlSeconds * 1000;
      const payload = Buffer.from(
        JSON.stringify({ wallet, exp, jti: randomBytes(12).toString('base64url') }),
      ).toString('base64url');
      return { token: `${payload}.${mac(payload)}`, expiresAt: new Date(exp) };
    },
    check(token: string): string {
      const [payload, tag, extra] = token.split('.');
      const expected = payload ? Buffer.from(mac(payload)) : undefined;
      if (!payload || !tag || extra !== undefined || !expected) {
        throw new Refusal(401, 'token_invalid', 'The access token is malformed.');
      }
      const given = Buffer.from(tag);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        throw new Refusal(401, 'token_invalid', 'The access token was not issued here or was altered.');
      }
      const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as {
        wallet: string;
        exp: number;
      };
      if (claims.exp <= clock()) throw new Refusal(401, 'token_expired', 'The access token has expired.');
      return claims.wallet;
    },
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > LOGIN_BODY_LIMIT) {
        reject(new Refusal(413, 'body_too_large', `The body exceeds ${LOGIN_BODY_LIMIT} bytes.`));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Deterministic demo balance per (wallet, mint): the same wallet always shows the same figure. */
function demoBalance(wallet: string, mint: string | null) {
  const digest = sha256Hex(`${STANDIN_NAME}|${wallet}|${mint ?? 'native'}`);
  return {
    ok: true,
    demo: true,
    wallet,
    mint,
    balance: (BigInt(`0x${digest.slice(0, 12)}`) % 10n ** 10n).toString(),
    decimals: mint ? 6 : 9,
    note: DEMO_NOTE,
  };
}

export async function startStandInProvider(opts: StandInOptions): Promise<StandInProvider> {
  const clock = opts.clock ?? Date.now;
  const challengeTtlMs = (opts.challengeTtlSeconds ?? 300) * 1000;
  const tokens = tokenIssuer(clock, opts.tokenTtlSeconds ?? 900);
  const served = { login: 0, balances: 0 };

  /** Asks the service to redeem the challenge: single use and expiry are the issuer's to decide. */
  async function redeem(body: { wallet: string; challenge: string; signature: string }) {
    let res: Response;
    try {
      res = await fetch(opts.redeemUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          [PROVIDER_SIGNATURE_HEADER]: signRedemption(opts.providerSecret, body, clock()),
        },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(opts.timeoutMs ?? 2000),
        redirect: 'error',
      });
    } catch {
      throw new Refusal(503, 'issuer_unreachable', 'The challenge issuer could not be reached.');
    }
    const answer = (await res.json().catch(() => ({}))) as { code?: unknown; detail?: unknown };
    if (res.ok) return;
    if (res.status >= 500)
      throw new Refusal(503, 'issuer_unavailable', `The issuer answered HTTP ${res.status}.`);
    const code =
      typeof answer.code === 'string' && /^[a-z_]{1,64}$/.test(answer.code)
        ? answer.code
        : 'challenge_refused';
    throw new Refusal(
      401,
      code,
      typeof answer.detail === 'string' ? answer.detail : 'The issuer refused the challenge.',
    );
  }

  async function login(req: IncomingMessage) {
    let input: Record<string, unknown>;
    try {
      input = JSON.parse(await readBody(req)) as Record<string, unknown>;
    } catch (err) {
      if (err instanceof Refusal) throw err;
      throw new Refusal(400, 'malformed', 'The body is not JSON.');
    }
    const { wallet, challenge, signature } = input;
    if (typeof wallet !== 'string' || typeof challenge !== 'string' || typeof signature !== 'string') {
      throw new Refusal(400, 'malformed', 'Send JSON { wallet, challenge, signature }.');
    }
    const parts = parseChallenge(challenge);
    if (!parts) {
      throw new Refusal(400, 'challenge_malformed', 'The challenge is not a title, Timestamp and User line.');
    }
    if (parts.wallet !== wallet) {
      throw new Refusal(401, 'challenge_wallet_mismatch', 'The challenge was issued to another wallet.');
    }
    const age = clock() - parts.timestamp.getTime();
    if (age > challengeTtlMs || age < -CLOCK_SKEW_MS) {
      throw new Refusal(401, 'challenge_expired', 'The challenge has expired; get a new one.');
    }
    if (!verifyWalletSignature(wallet, challenge, signature)) {
      throw new Refusal(401, 'signature_invalid', 'The signature does not verify with this wallet.');
    }
    await redeem({ wallet, challenge, signature });
    const { token, expiresAt } = tokens.issue(wallet);
    return {
      ok: true,
      accessToken: token,
      tokenType: 'Bearer',
      expiresIn: Math.round((expiresAt.getTime() - clock()) / 1000),
      expiresAt: expiresAt.toISOString(),
      demo: true,
    };
  }

  function balances(req: IncomingMessage, url: URL, wallet: string) {
    const mint = url.searchParams.get('mint');
    if (!is32Bytes58(wallet) || (mint !== null && !is32Bytes58(mint))) {
      throw new Refusal(400, 'malformed', 'wallet and mint are base58 ed25519 public keys.');
    }
    const token = /^Bearer (\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (!token) throw new Refusal(401, 'token_missing', 'Send Authorization: Bearer <ACCESS_TOKEN>.');
    if (tokens.check(token) !== wallet) {
      throw new Refusal(403, 'token_wallet_mismatch', 'The access token belongs to another wallet.');
    }
    return demoBalance(wallet, mint);
  }

  async function route(req: IncomingMessage, url: URL): Promise<unknown> {
    if (req.method === 'GET' && url.pathname === '/health') {
      return { ok: true, provider: STANDIN_NAME, mock: true };
    }
    if (req.method === 'GET' && url.pathname === '/v1/onchain-proof') {
      return {
        ok: true,
        mock: true,
        verified: false,
        program: null,
        detail: 'The local stand-in runs no on-chain program; there is nothing to prove.',
      };
    }
    if (req.method === 'POST' && url.pathname === '/v1/spl/login') {
      served.login++;
      return login(req);
    }
    const m = /^\/v1\/spl\/balances\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && m) {
      served.balances++;
      return balances(req, url, m[1]!);
    }
    throw new Refusal(404, 'not_found', 'No such route on the stand-in provider.');
  }

  const server = http.createServer((req: IncomingMessage, res: ServerResponse) => {
    const send = (status: number, body: unknown) => {
      if (res.headersSent) return;
      res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
      res.end(JSON.stringify(body));
    };
    route(req, new URL(req.url ?? '/', 'http://stand-in')).then(
      (body) => send(200, body),
      (err: unknown) =>
        err instanceof Refusal
          ? send(err.status, { ok: false, error: err.code, detail: err.message })
          : send(500, { ok: false, error: 'internal', detail: 'The stand-in failed.' }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, opts.host ?? '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    served,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
