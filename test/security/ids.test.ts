// Ids are names, not keys: each carries 80 bits of fresh randomness, so ids made by the same process
// in the same millisecond (an attacker's and a victim's) are no closer to each other than chance.
import { decodeTime } from 'ulid';
import { afterAll, describe, expect, it } from 'vitest';
import { createHmac } from 'node:crypto';
import { clientNetwork, networkTag } from '../../shared/platform/client-network';
import { purposeKey } from '../../shared/platform/sealing';
import { newId } from '../../shared/platform/ids';
import { testApp } from '../helpers';

const app = testApp();
afterAll(() => app.close());

const randomPart = (id: string): bigint => {
  const crockford = '0123456789abcdefghjkmnpqrstvwxyz';
  let n = 0n;
  for (const c of id.slice(id.indexOf('_') + 1 + 10)) n = n * 32n + BigInt(crockford.indexOf(c));
  return n;
};

/** The smallest distance between the random parts of any two ids. */
function closest(ids: string[]): bigint {
  const parts = ids.map(randomPart).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  let min = 1n << 80n;
  for (let i = 1; i < parts.length; i++) if (parts[i]! - parts[i - 1]! < min) min = parts[i]! - parts[i - 1]!;
  return min;
}

// For n uniform 80-bit draws, the chance that any two lie within 2^40 of each other is about
// n² · 2^40 / 2^80: below 1e-6 for a thousand ids. Consecutive (monotonic) ids differ by 1.
const CHANCE = 1n << 40n;

describe('ids', () => {
  it('made in one tight loop share their millisecond, not their randomness', () => {
    const ids = Array.from({ length: 1000 }, () => newId('chk'));
    const perMs = new Map<number, number>();
    for (const id of ids) {
      const ms = decodeTime(id.slice(4).toUpperCase());
      perMs.set(ms, (perMs.get(ms) ?? 0) + 1);
    }
    expect(Math.max(...perMs.values())).toBeGreaterThan(1);
    expect(closest(ids)).toBeGreaterThan(CHANCE);
  });

  it('of jobs created concurrently through the API are no closer than chance', async () => {
    const created = await Promise.all(
      Array.from({ length: 12 }, () =>
        app.request
          .post('/api/jobs')
          .send({ service: 'attest.timestamp', input: { digest: 'ab'.repeat(32) } })
          .expect(202),
      ),
    );
    const ids = created.map((r) => r.body.job.id as string);
    expect(new Set(ids).size).toBe(12);
    expect(closest(ids)).toBeGreaterThan(CHANCE);
  });
});

describe('client networks', () => {
  it('count IPv4 by address and IPv6 by its /64, mapped IPv4 as IPv4', () => {
    expect(clientNetwork('203.0.113.7', 64)).toBe('203.0.113.7');
    expect(clientNetwork('::ffff:203.0.113.7', 64)).toBe('203.0.113.7');
    const a = clientNetwork('2001:db8:1:2:aaaa::1', 64);
    expect(a).toBe('2001:db8:1:2::/64');
    expect(clientNetwork('2001:db8:1:2:ffff:ffff:ffff:fffe', 64)).toBe(a);
    expect(clientNetwork('2001:db8:1:3::1', 64)).not.toBe(a);
    expect(clientNetwork('2001:db8:1:3::1', 48)).toBe('2001:db8:1::/48');
    expect(clientNetwork('fe80::1%eth0', 64)).toBe('fe80::/64');
    expect(clientNetwork('unknown', 64)).toBe('unknown');
  });

  it('are stored as keyed tags: equal for a network, remembered or not, and never the address', () => {
    const first = networkTag('203.0.113.7');
    expect(first).toMatch(/^[\w-]{22}$/);
    expect(first).not.toContain('203');
    // Remembered, then after a flood of other networks has emptied the memo: the same tag.
    expect(networkTag('203.0.113.7')).toBe(first);
    for (let i = 0; i < 10_001; i++) networkTag(`198.51.${i >> 8}.${i & 255}`);
    expect(networkTag('203.0.113.7')).toBe(first);
    expect(networkTag('203.0.113.8')).not.toBe(first);
    expect(first).toBe(
      createHmac('sha256', purposeKey('client-network'))
        .update('203.0.113.7')
        .digest('base64url')
        .slice(0, 22),
    );
  });
});
