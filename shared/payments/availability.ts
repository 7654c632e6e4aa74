// Which payable assets can be paid in now, and why not: configured, and served on their own network.
import { endpointNetwork } from '../chains';
import { AssetConfigError, assetStatus } from '../chains/assets';
import type { AssetStatus } from '../chains/assets';
import { AppError } from '../platform/errors';

function assetConfigProblem(err: unknown): never {
  if (err instanceof AssetConfigError) {
    throw new AppError(503, 'asset_config_invalid', 'The payment asset configuration is invalid.');
  }
  throw err;
}

/**
 * The payable assets with whether each can be paid in now and why not (pricing, checkout, the gate):
 * configured, and, where the family's endpoint has said which network it serves, that network. An
 * endpoint on another network (a devnet RPC for mainnet assets) turns its assets off with the reason;
 * one that has not answered yet leaves them on (their payments wait for it, they never settle blind).
 */
export async function assetAvailability(): Promise<AssetStatus[]> {
  let statuses: AssetStatus[];
  try {
    statuses = assetStatus();
  } catch (err) {
    return assetConfigProblem(err);
  }
  const families = [...new Set(statuses.filter((s) => s.enabled).map((s) => s.asset.family))];
  const served = new Map(
    await Promise.all(families.map(async (f) => [f, await endpointNetwork(f)] as const)),
  );
  return statuses.map((s): AssetStatus => {
    const actual = served.get(s.asset.family);
    if (!s.enabled || actual === undefined || actual === s.asset.network) return s;
    return {
      asset: s.asset,
      enabled: false,
      reason: 'wrong_network',
      detail: `The ${s.asset.family} endpoint serves ${actual}, not ${s.asset.network}; ${s.asset.id} is not offered until it does.`,
    };
  });
}
