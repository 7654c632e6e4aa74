// Every bench:* script ends with one JSON line (figures, same-run baseline, targets), so runs compare by script.
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { printReport, targetsMet } from '../../bench/report';

afterEach(() => vi.restoreAllMocks());

describe('bench report line', () => {
  it('judges each target by its bounds, and an unmeasured figure as null', () => {
    expect(
      targetsMet(
        { rate: 1200, ratio: 0.29, slowest: 0.9, missing: null, broken: NaN },
        {
          rate: { min: 1000 },
          ratio: { min: 0.3 },
          slowest: { max: 1.0 },
          missing: { min: 1 },
          broken: { max: 1 },
          absent: { min: 1 },
        },
      ),
    ).toEqual({ rate: true, ratio: false, slowest: true, missing: null, broken: null, absent: null });
  });

  it('prints one line of JSON with figures, baseline, target and verdicts', () => {
    const lines: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => (lines.push(String(chunk)), true));
    printReport({
      bench: 'jobs --cluster',
      settings: { jobs: 10 },
      figures: { jobsPerSecond: 1234.56789, ratioToBaseline: 0.2 },
      baseline: { bareBullmqJobsPerSecond: 6172.8 },
      target: { jobsPerSecond: { min: 1000 }, ratioToBaseline: { min: 0.3 } },
    });
    expect(lines).toHaveLength(1);
    expect(lines[0]!.endsWith('\n')).toBe(true);
    expect(lines[0]!.trim()).not.toContain('\n');
    const report = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(report).toMatchObject({
      bench: 'jobs --cluster',
      settings: { jobs: 10 },
      figures: { jobsPerSecond: 1234.57, ratioToBaseline: 0.2 },
      baseline: { bareBullmqJobsPerSecond: 6172.8 },
      target: { jobsPerSecond: { min: 1000 }, ratioToBaseline: { min: 0.3 } },
      met: { jobsPerSecond: true, ratioToBaseline: false },
    });
    expect(report.host).toMatchObject({ cores: expect.any(Number), node: process.version });
  });

  it('is what every bench:* script prints last', () => {
    const scripts = (JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: Record<string, string> })
      .scripts;
    const benches = Object.entries(scripts).filter(([name]) => name.startsWith('bench:'));
    expect(benches.length).toBeGreaterThan(0);
    for (const [name, command] of benches) {
      const file = /\bbench\/[\w-]+\.ts\b/.exec(command)?.[0];
      expect(file, `${name} runs a bench/*.ts file`).toBeDefined();
      expect(readFileSync(file!, 'utf8'), `${file} prints the report line`).toMatch(/\bprintReport\(/);
    }
  });
});
