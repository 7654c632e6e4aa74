// The chain settings only this line can parse (the platform's env schema checks their form alone):
// each process's main refuses to start on them, with the same one line per variable as any setting.
import type { Env } from '../platform/env';
import { parseAccountKey } from './bitcoin-address';

export function chainSettingIssues(e: Pick<Env, 'TREASURY_BITCOIN_XPUB'>): string[] {
  if (e.TREASURY_BITCOIN_XPUB === undefined) return [];
  try {
    parseAccountKey(e.TREASURY_BITCOIN_XPUB);
    return [];
  } catch (err) {
    return [`TREASURY_BITCOIN_XPUB: ${(err as Error).message}`];
  }
}
