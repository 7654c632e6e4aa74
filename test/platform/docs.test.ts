// The README documents every configuration variable the service reads.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { envSchema } from '../../shared/platform/env';

describe('README', () => {
  it('has every configuration variable in its table', () => {
    const readme = readFileSync('README.md', 'utf8');
    const missing = Object.keys(envSchema.shape).filter((name) => !readme.includes(`\`${name}\``));
    expect(missing).toEqual([]);
  });

  it('shows the two commands', () => {
    const readme = readFileSync('README.md', 'utf8');
    expect(readme).toContain('npm start');
    expect(readme).toContain('npm test');
  });
});
