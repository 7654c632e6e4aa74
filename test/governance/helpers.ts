// Real ed25519 wallets (base58, as Solana prints them), voters' identities and ballots made with the
// voter's client, and small helpers for the governance suites.
import { generateKeyPairSync, randomBytes, sign } from 'node:crypto';
import { join } from 'node:path';
import bs58 from 'bs58';
import { createIdentity, loadBallotArtifacts, makeBallot } from '../../shared/governance/ballot-client';
import type {
  Ballot,
  BallotArtifacts,
  BallotInfo,
  Identity,
  NativeBallotProver,
} from '../../shared/governance/ballot-client';
import { loadNativeProver } from '../../native-prover';
import { logger } from '../../shared/platform/log';
import type { TestApp } from '../helpers';
import { captureLogs as captureProcessLogs } from '../logs';

export const OPERATOR = 'Bearer op_test_token_0123456789';

export interface Wallet {
  address: string;
  sign(message: string): string;
}

export function wallet(): Wallet {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const raw = Buffer.from(publicKey.export({ format: 'jwk' }).x as string, 'base64url');
  return {
    address: bs58.encode(raw),
    sign: (message) => bs58.encode(sign(null, Buffer.from(message), privateKey)),
  };
}

export const salt = (): string => randomBytes(32).toString('hex');

/** Waits until a wall-clock time (a window boundary): there is no event to wait on for the clock. */
export async function until(at: string | Date, extraMs = 30): Promise<void> {
  const ms = new Date(at).getTime() - Date.now() + extraMs;
  if (ms > 0) await new Promise((r) => setTimeout(r, ms));
}

/** Every log line of this process at the most verbose level, until stop(). */
export const captureLogs = () => captureProcessLogs(logger);

// --- Anonymous ballots, made as a voter makes them: through the client module, never the API.

let artifacts: Promise<BallotArtifacts> | undefined;
/** The committed ballot circuit, read once per file. */
export const ballotArtifacts = (): Promise<BallotArtifacts> =>
  (artifacts ??= loadBallotArtifacts(join(process.cwd(), 'circuits', 'artifacts')));

/** What a voter fetches before proving: the proposal key and the room's whole member list. */
export async function ballotInfo(request: TestApp['request'], proposalId: string): Promise<BallotInfo> {
  const key = (await request.get(`/api/governance/proposals/${proposalId}/ballot-key`).expect(200)).body;
  const tree = (await request.get(`/api/governance/rooms/${key.roomId}/tree`).expect(200)).body;
  return {
    proposalId,
    roomId: key.roomId,
    publicKey: key.publicKey,
    scheme: key.scheme,
    members: tree.identityCommitments,
  };
}

let native: Promise<NativeBallotProver | undefined> | undefined;
/**
 * The project's native prover when it is built here (the client takes it as a voter's machine would),
 * else undefined and the client proves with snarkjs: suites that make many ballots stay fast.
 */
const nativeProver = () =>
  (native ??= (async () => loadNativeProver()?.load((await ballotArtifacts()).zkey))());

/** A ballot body made by the client for an identity and a choice. */
export async function makeBallotBody(info: BallotInfo, identity: Identity, choice: string): Promise<Ballot> {
  const { timings: _t, ...ballot } = await makeBallot({
    identity,
    info,
    choice,
    artifacts: await ballotArtifacts(),
    native: await nativeProver(),
  });
  return ballot;
}

/** Identities for a room, registered by its administrator. */
export async function addIdentities(request: TestApp['request'], roomId: string, count: number) {
  const ids: Identity[] = [];
  for (let i = 0; i < count; i++) ids.push(await createIdentity());
  await request
    .post(`/api/governance/rooms/${roomId}/identities`)
    .set('Authorization', OPERATOR)
    .send({ identityCommitments: ids.map((i) => i.commitment) })
    .expect(200);
  return ids;
}
