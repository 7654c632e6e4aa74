// What a running `npm start` tells the command-line tools of its checkout: where its Postgres and its
// service answer, and where its operator token is kept. dev/start.ts writes DATA_DIR/running.json once
// everything runs and removes it when it stops; `npm run keys` and `npm run admin` read it when no
// setting of theirs (DATABASE_URL, PX_URL, OPERATOR_TOKEN) says otherwise, and say that they did.
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

const localRunSchema = z.object({
  pid: z.number().int().positive(),
  databaseUrl: z.string(),
  serviceUrl: z.string(),
  /** Where npm start keeps the operator token it made (absent when OPERATOR_TOKEN was given to it). */
  operatorTokenFile: z.string().optional(),
});
export type LocalRun = z.infer<typeof localRunSchema>;

export const localRunFile = (dataDir: string): string => join(dataDir, 'running.json');

/** Written by npm start (readable by its user only: the embedded Postgres URL holds its password). */
export function writeLocalRun(dataDir: string, run: LocalRun): void {
  writeFileSync(localRunFile(dataDir), `${JSON.stringify(run, null, 2)}\n`, { mode: 0o600 });
}

export function removeLocalRun(dataDir: string): void {
  rmSync(localRunFile(dataDir), { force: true });
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The npm start running from this checkout's DATA_DIR, or undefined (none, or one that died). */
export function readLocalRun(dataDir: string): LocalRun | undefined {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(localRunFile(dataDir), 'utf8'));
  } catch {
    return undefined;
  }
  const parsed = localRunSchema.safeParse(json);
  if (!parsed.success || !alive(parsed.data.pid)) return undefined;
  return parsed.data;
}

/** The operator token a running npm start made, when it made one. */
export function localOperatorToken(run: LocalRun): string | undefined {
  if (!run.operatorTokenFile) return undefined;
  try {
    return readFileSync(run.operatorTokenFile, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
