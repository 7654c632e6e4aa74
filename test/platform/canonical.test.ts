// Canonical JSON is what every hash and signature commits to: sorted keys (by UTF-16 code units), no
// whitespace, undefined members dropped — the same bytes as the plain recursive form.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../shared/platform/canonical';

/** The reference: the plain recursive form (entries sorted with `<`, joined), slower and obviously right. */
function reference(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => reference(v === undefined ? null : v)).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${reference(v)}`).join(',')}}`;
}

describe('canonical JSON', () => {
  it('gives the bytes of the plain recursive form for any JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (v) => {
        expect(canonicalJson(v)).toBe(reference(v));
      }),
      { numRuns: 500 },
    );
  });

  it('sorts by code units, drops undefined members, and refuses what JSON cannot hold', () => {
    expect(canonicalJson({ b: 1, a: [undefined, 2n], A: 'x', é: true, z: undefined, 10: 0, '': 0 })).toBe(
      '{"":0,"10":0,"A":"x","a":[null,"2"],"b":1,"é":true}',
    );
    expect(canonicalJson(new Date('2025-01-01T00:00:00.000Z'))).toBe('"2025-01-01T00:00:00.000Z"');
    expect(() => canonicalJson(Number.NaN)).toThrow(TypeError);
    expect(() => canonicalJson(() => 1)).toThrow(TypeError);
    expect(() => canonicalJson(undefined)).toThrow(TypeError);
  });
});
