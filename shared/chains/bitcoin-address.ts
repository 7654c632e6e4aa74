// Receiving addresses per quote, derived from the treasury's extended public key (BIP84, native segwit
// P2WPKH), the way BTCPay Server gives each invoice its own address. Only public keys are handled:
// the service can derive where to be paid, never spend.
import { HDKey } from '@scure/bip32';
import { NETWORK, TEST_NETWORK, p2wpkh } from '@scure/btc-signer';

// SLIP-132 version bytes: xpub/tpub (BIP32), zpub/vpub (BIP84 marks its keys with these).
const versions = {
  xpub: { public: 0x0488b21e, private: 0x0488ade4, mainnet: true },
  zpub: { public: 0x04b24746, private: 0x04b2430c, mainnet: true },
  tpub: { public: 0x043587cf, private: 0x04358394, mainnet: false },
  vpub: { public: 0x045f1cf6, private: 0x045f18bc, mainnet: false },
} as const;

export interface AccountKey {
  /** The account-level public key the receiving chain hangs off. */
  key: HDKey;
  mainnet: boolean;
  /** The unhardened path from the key to the receiving chain (BIP84: [0], the external chain). */
  chain: number[];
  /** A stable name for this key and chain, under which the next unused index is kept. */
  scheme: string;
}

// BIP380's descriptor checksum: a BCH code over the descriptor's character set.
const INPUT_CHARSET =
  '0123456789()[],\'/*abcdefgh@:$%{}IJKLMNOPQRSTUVWXYZ&+-.;<=>?!^_|~ijklmnopqrstuvwxyzABCDEFGH`#"\\ ';
const CHECKSUM_CHARSET = 'qpzry9x8gf2tvdw0s3jn54khce6mua7l';
const GENERATOR = [0xf5dee51989n, 0xa9fdca3312n, 0x1bab10e32dn, 0x3706b1677an, 0x644d626ffdn];

function polymod(symbols: number[]): bigint {
  let chk = 1n;
  for (const value of symbols) {
    const top = chk >> 35n;
    chk = ((chk & 0x7ffffffffn) << 5n) ^ BigInt(value);
    for (let i = 0; i < 5; i++) if ((top >> BigInt(i)) & 1n) chk ^= GENERATOR[i]!;
  }
  return chk;
}

function expand(s: string): number[] | undefined {
  const symbols: number[] = [];
  let groups: number[] = [];
  for (const c of s) {
    const v = INPUT_CHARSET.indexOf(c);
    if (v < 0) return undefined;
    symbols.push(v & 31);
    groups.push(v >> 5);
    if (groups.length === 3) {
      symbols.push(groups[0]! * 9 + groups[1]! * 3 + groups[2]!);
      groups = [];
    }
  }
  if (groups.length === 1) symbols.push(groups[0]!);
  else if (groups.length === 2) symbols.push(groups[0]! * 3 + groups[1]!);
  return symbols;
}

/** Whether `descriptor#checksum` carries the right BIP380 checksum. */
export function descriptorChecksumValid(withChecksum: string): boolean {
  const at = withChecksum.length - 9;
  if (at < 0 || withChecksum[at] !== '#') return false;
  const sum = withChecksum.slice(at + 1);
  if (![...sum].every((c) => CHECKSUM_CHARSET.includes(c))) return false;
  const symbols = expand(withChecksum.slice(0, at));
  if (!symbols) return false;
  return polymod([...symbols, ...[...sum].map((c) => CHECKSUM_CHARSET.indexOf(c))]) === 1n;
}

function parseExtendedKey(text: string): { key: HDKey; mainnet: boolean } {
  const prefix = text.slice(0, 4) as keyof typeof versions;
  const v = versions[prefix];
  if (!v) throw new Error('expected an xpub, zpub, tpub or vpub extended public key');
  let key: HDKey;
  try {
    key = HDKey.fromExtendedKey(text, { public: v.public, private: v.private });
  } catch (err) {
    throw new Error(`not a valid extended public key (${(err as Error).message})`);
  }
  if (key.privateKey) throw new Error('an extended private key was given; give only the public key');
  return { key, mainnet: v.mainnet };
}

/**
 * Parses TREASURY_BITCOIN_XPUB: a bare account key (`xpub…`, `zpub…`, `tpub…`, `vpub…`; addresses
 * come from its external chain, /0/i) or a `wpkh(...)` descriptor with a ranged path
 * (`wpkh([fingerprint/84h/0h/0h]xpub…/0/*)`, `…/<0;1>/*` takes the receiving branch), with or without
 * its checksum. Throws a message a person can act on.
 */
export function parseAccountKey(value: string): AccountKey {
  const text = value.trim();
  if (!text.startsWith('wpkh(')) {
    const { key, mainnet } = parseExtendedKey(text);
    return { key, mainnet, chain: [0], scheme: `${key.publicExtendedKey}/0/*` };
  }
  let body = text;
  if (/#[a-z0-9]{8}$/.test(text)) {
    if (!descriptorChecksumValid(text)) throw new Error('the descriptor checksum does not match');
    body = text.slice(0, -9);
  }
  const m =
    /^wpkh\((?:\[[0-9a-fA-F]{8}(?:\/\d+['h]?)*\])?([a-zA-Z0-9]+)((?:\/(?:\d+|<\d+;\d+>))*)\/\*\)$/.exec(body);
  if (!m) throw new Error('expected wpkh([origin]KEY/0/*) with an unhardened ranged path');
  const { key, mainnet } = parseExtendedKey(m[1]!);
  const chain = (m[2] ?? '')
    .split('/')
    .filter(Boolean)
    .map((step) => Number(step.startsWith('<') ? step.slice(1).split(';')[0] : step));
  if (chain.some((n) => !Number.isSafeInteger(n) || n >= 2 ** 31))
    throw new Error('derivation steps must be unhardened indexes');
  return {
    key,
    mainnet,
    chain,
    scheme: `${key.publicExtendedKey}/${chain.join('/')}${chain.length ? '/' : ''}*`,
  };
}

/** Bech32 human-readable parts by the CAIP-2 id of the Bitcoin network (its genesis hash prefix). */
const regtest = 'bip122:0f9188f13cb7b2c71f2a335e3a4fc328';

/** The P2WPKH address at `index` of the receiving chain, for the network named by its CAIP-2 id. */
export function deriveAddress(account: AccountKey, index: number, network: string): string {
  if (!Number.isSafeInteger(index) || index < 0 || index >= 2 ** 31)
    throw new RangeError('index out of range');
  const mainnet = network === 'bip122:000000000019d6689c085ae165831e93';
  if (mainnet !== account.mainnet) {
    throw new Error(
      `the extended key is for ${account.mainnet ? 'mainnet' : 'a test network'}, not ${network}`,
    );
  }
  let node = account.key;
  for (const step of account.chain) node = node.deriveChild(step);
  node = node.deriveChild(index);
  const net = mainnet ? NETWORK : network === regtest ? { ...TEST_NETWORK, bech32: 'bcrt' } : TEST_NETWORK;
  const address = p2wpkh(node.publicKey!, net).address;
  if (!address) throw new Error('no address could be derived');
  return address;
}
