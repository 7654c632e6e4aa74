// The asset registry: the nine assets, ASSETS_JSON overrides, and which are enabled by treasury settings.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseEnv } from '../../shared/platform/env';
import {
  AssetConfigError,
  assetStatus,
  enabledAssets,
  findAsset,
  listAssets,
} from '../../shared/chains/assets';

describe('asset registry', () => {
  it('holds the nine assets with family, network, decimals and mainnet contracts', () => {
    const assets = listAssets(parseEnv({}));
    expect(assets.map((a) => a.id)).toEqual([
      'USDC-SOL',
      'USDC-ETH',
      'SOL',
      'ETH',
      'BTC',
      'WBTC-ETH',
      'XMR',
      'USDT-SOL',
      'PYUSD-SOL',
    ]);
    const byId = Object.fromEntries(assets.map((a) => [a.id, a]));
    expect(byId['USDC-SOL']).toMatchObject({
      family: 'solana',
      decimals: 6,
      stable: true,
      contract: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    });
    expect(byId['USDC-ETH']).toMatchObject({
      family: 'evm',
      decimals: 6,
      network: 'eip155:1',
      contract: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
    });
    expect(byId['WBTC-ETH']).toMatchObject({ family: 'evm', decimals: 8, stable: false, rateSymbol: 'BTC' });
    expect(byId['USDT-SOL']).toMatchObject({
      decimals: 6,
      contract: 'Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB',
    });
    expect(byId['PYUSD-SOL']).toMatchObject({
      contract: '2b1kV6DkPAnxd5ixfnxCpjxmKwqjjaYmCZfHsFu24GXo',
      tokenProgram: 'TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb',
    });
    expect(byId.SOL).toMatchObject({ decimals: 9, network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp' });
    expect(byId.ETH).toMatchObject({ decimals: 18 });
    expect(byId.BTC).toMatchObject({
      decimals: 8,
      family: 'bitcoin',
      network: 'bip122:000000000019d6689c085ae165831e93',
    });
    expect(byId.XMR).toMatchObject({ decimals: 12, family: 'monero' });
    for (const a of assets)
      expect(a.contract === undefined).toBe(['SOL', 'ETH', 'BTC', 'XMR'].includes(a.id));
  });

  it('enables exactly the assets whose family has a treasury, and says why the others are off', () => {
    const settings = parseEnv({ TREASURY_SOLANA: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe' });
    expect(enabledAssets(settings).map((a) => a.id)).toEqual(['USDC-SOL', 'SOL', 'USDT-SOL', 'PYUSD-SOL']);
    const status = assetStatus(settings);
    const btc = status.find((s) => s.asset.id === 'BTC');
    expect(btc).toMatchObject({ enabled: false, reason: 'no_treasury' });
    expect(btc && !btc.enabled && btc.detail).toContain('TREASURY_BITCOIN');
    expect(status.find((s) => s.asset.id === 'SOL')).toMatchObject({
      enabled: true,
      payTo: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe',
    });
    expect(enabledAssets(parseEnv({}))).toEqual([]);
  });

  it('applies ASSETS_JSON overrides, including turning an asset off', () => {
    const settings = parseEnv({
      TREASURY_SOLANA: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe',
      ASSETS_JSON: JSON.stringify({
        'USDC-SOL': {
          contract: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
          network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
        },
        'PYUSD-SOL': { disabled: true },
      }),
    });
    expect(findAsset('USDC-SOL', settings)).toMatchObject({
      contract: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
      decimals: 6,
    });
    expect(enabledAssets(settings).map((a) => a.id)).toEqual(['USDC-SOL', 'SOL', 'USDT-SOL']);
    expect(assetStatus(settings).find((s) => s.asset.id === 'PYUSD-SOL')).toMatchObject({
      enabled: false,
      reason: 'disabled_by_config',
    });
    // The built-in registry is untouched by another configuration's overrides.
    expect(findAsset('USDC-SOL', parseEnv({}))?.contract).toBe(
      'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    );
    expect(findAsset('DOGE', settings)).toBeUndefined();
  });

  it('refuses malformed overrides with a message naming the problem', () => {
    const bad = (json: string) => () => listAssets({ ASSETS_JSON: json });
    expect(bad('{')).toThrow(AssetConfigError);
    expect(bad('{"DOGE": {"decimals": 8}}')).toThrow(/DOGE/);
    expect(bad('{"USDC-ETH": {"contract": "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v"}}')).toThrow(
      /not an address/,
    );
    expect(bad('{"ETH": {"contract": "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"}}')).toThrow(/native coin/);
    expect(bad('{"ETH": {"decimals": 1.5}}')).toThrow(AssetConfigError);
    expect(bad('{"ETH": {"colour": "blue"}}')).toThrow(AssetConfigError);
  });

  it('validates treasury addresses per family at start-up', () => {
    expect(() =>
      parseEnv({
        TREASURY_SOLANA: 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe',
        TREASURY_EVM: '0x90F8bf6A479f320ead074411a4B0e7944Ea8c9C1',
        TREASURY_BITCOIN: 'bc1q0yqp4f05hxq6pdj5c0urf5zhxk2mpm2ndx85za',
        TREASURY_MONERO:
          '7BnERTpvL5MbCLtj5n9No7J5oE5hHiB3tVCK5cjSvCsYWD2WRJLFuWeKTLiXo5QJqt2ZwUaLy2Vh1Ad51K7FNgqcHgjW85o',
      }),
    ).not.toThrow();
    expect(() => parseEnv({ TREASURY_BITCOIN: '34RQERthXaruAXtW6q1bvrGTeUbqi2Sm1i' })).not.toThrow();
    for (const [name, value] of [
      ['TREASURY_SOLANA', '0x90F8bf6A479f320ead074411a4B0e7944Ea8c9C1'],
      ['TREASURY_EVM', '90F8bf6A479f320ead074411a4B0e7944Ea8c9C1'],
      ['TREASURY_BITCOIN', 'bc1qINVALID'],
      ['TREASURY_MONERO', 'BXT1K8kzYXWMi6ihg7m9UqiHW4iJbJ69zumELHE9oBLe'],
    ] as const) {
      expect(() => parseEnv({ [name]: value })).toThrow(ConfigError);
      try {
        parseEnv({ [name]: value });
      } catch (err) {
        expect((err as ConfigError).issues[0]).toContain(name);
      }
    }
  });
});
