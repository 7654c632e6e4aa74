// `npm run px`'s key file: named wallets (their ed25519 seeds), the license key a trial claim issued,
// the organization's actor salt and each sealed bid's amount and salt until it is revealed. Written
// readable by its owner only (0600, in a 0700 folder when it makes one), replaced whole on each change
// (a temporary file renamed over it), refused when others may read it; its secrets are never printed.
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import bs58 from 'bs58';
import { walletFromSeed } from './client/crypto';
import type { Wallet } from './client/crypto';

export interface KeptLicense {
  id: string;
  token: string;
  tier: string;
  organization: string;
  expiresAt: string;
}

interface Contents {
  wallets: Record<string, string>;
  license?: KeptLicense;
  actorSalt?: string;
  bids: Record<string, Record<string, { amount: string; salt: string }>>;
}

export const defaultKeyFile = (): string => join(homedir(), '.proof-exchange', 'keys.json');

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

export class KeyFile {
  private data: Contents;

  constructor(readonly path: string) {
    if (!existsSync(path)) {
      this.data = { wallets: {}, bids: {} };
      return;
    }
    const mode = statSync(path).mode & 0o777;
    if (mode & 0o077)
      throw new Error(
        `${path} may be read by others (mode ${mode.toString(8)}): chmod 600 ${path}, or keep the keys elsewhere`,
      );
    const raw = JSON.parse(readFileSync(path, 'utf8')) as Partial<Contents>;
    this.data = { wallets: raw.wallets ?? {}, bids: raw.bids ?? {}, ...raw };
  }

  private save(): void {
    const dir = dirname(this.path);
    if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: 0o700 });
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(this.data, null, 2)}\n`, { mode: 0o600 });
    chmodSync(tmp, 0o600);
    renameSync(tmp, this.path);
  }

  /** Makes a wallet under a new name; a name is never reused (that would lose a key). */
  addWallet(name: string, wallet: Wallet): void {
    if (!NAME.test(name)) throw new Error(`a wallet name is letters, digits, '.', '_' or '-': ${name}`);
    if (this.data.wallets[name]) throw new Error(`${this.path} already holds a wallet named ${name}`);
    this.data.wallets[name] = wallet.seed;
    this.save();
  }

  wallet(name: string): Wallet {
    const seed = this.data.wallets[name];
    if (!seed)
      throw new Error(`${this.path} holds no wallet named ${name} (npm run px -- wallet new ${name})`);
    return walletFromSeed(seed);
  }

  walletNames(): string[] {
    return Object.keys(this.data.wallets);
  }

  /** A wallet's address by its name here, or an address given as is. */
  address(nameOrAddress: string): string {
    if (this.data.wallets[nameOrAddress]) return this.wallet(nameOrAddress).address;
    let bytes: Uint8Array | undefined;
    try {
      bytes = bs58.decode(nameOrAddress);
    } catch {
      bytes = undefined;
    }
    if (bytes?.length === 32) return nameOrAddress;
    throw new Error(`${nameOrAddress} is neither a wallet in ${this.path} nor a wallet address`);
  }

  get license(): KeptLicense | undefined {
    return this.data.license;
  }

  keepLicense(license: KeptLicense): void {
    if (this.data.license)
      throw new Error(`${this.path} already holds license ${this.data.license.id}; use another --keys file`);
    this.data.license = license;
    this.save();
  }

  /** The organization's actor salt, made on first use. */
  actorSalt(): string {
    if (!this.data.actorSalt) {
      this.data.actorSalt = randomBytes(32).toString('hex');
      this.save();
    }
    return this.data.actorSalt;
  }

  keptBid(auctionId: string, address: string): { amount: string; salt: string } | undefined {
    return this.data.bids[auctionId]?.[address];
  }

  /** Keeps a bid's amount and salt before it is sent: without them it could never be revealed. */
  keepBid(auctionId: string, address: string, bid: { amount: string; salt: string }): void {
    if (this.keptBid(auctionId, address))
      throw new Error(`${this.path} already keeps a bid of ${address} in ${auctionId}`);
    (this.data.bids[auctionId] ??= {})[address] = bid;
    this.save();
  }

  dropBid(auctionId: string, address: string): void {
    delete this.data.bids[auctionId]?.[address];
    this.save();
  }
}
