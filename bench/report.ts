// The last line every bench:* prints: one JSON object with the run's figures, the baseline measured in
// the same run and the targets, so runs can be compared by a script (`tail -n1 | jq`).
import { cpus } from 'node:os';

/** A bound on one figure, named by its key in `figures`. */
export interface Target {
  min?: number;
  max?: number;
}

export type Figures = Record<string, number | null>;

export interface BenchReport {
  /** The npm script's name after `bench:`, with its mode, e.g. `jobs --cluster`. */
  bench: string;
  /** What the run was asked to do: counts, concurrency, backends. */
  settings?: Record<string, unknown>;
  figures: Figures;
  baseline: Figures;
  target: Record<string, Target>;
}

/** Whether each targeted figure is within its bounds; null when the run could not measure it. */
export function targetsMet(figures: Figures, target: Record<string, Target>): Record<string, boolean | null> {
  return Object.fromEntries(
    Object.entries(target).map(([key, t]) => {
      const v = figures[key];
      if (v === null || v === undefined || !Number.isFinite(v)) return [key, null];
      return [key, (t.min === undefined || v >= t.min) && (t.max === undefined || v <= t.max)];
    }),
  );
}

const rounded = (figures: Figures): Figures =>
  Object.fromEntries(
    Object.entries(figures).map(([k, v]) => [
      k,
      v === null || !Number.isFinite(v) ? null : +v.toPrecision(6),
    ]),
  );

/** Prints the report line; call it last, after every child process has stopped. */
export function printReport(report: BenchReport): void {
  const cpu = cpus();
  const line = {
    bench: report.bench,
    at: new Date().toISOString(),
    host: { cores: cpu.length, cpu: cpu[0]?.model ?? 'unknown', node: process.version },
    settings: report.settings ?? {},
    figures: rounded(report.figures),
    baseline: rounded(report.baseline),
    target: report.target,
    met: targetsMet(report.figures, report.target),
  };
  process.stdout.write(`${JSON.stringify(line)}\n`);
}
