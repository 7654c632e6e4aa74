// `npm run lint:openapi`: generates both OpenAPI documents the service serves (/openapi.json and
// /openapi/platform.json) from the route tables in-process — no server, database or Redis — into a
// temporary folder and lints them with Redocly (redocly.yaml: the recommended ruleset). Exits non-zero
// on any error.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exchangeDocument, platformDocument } from '../api/http/openapi';
import type { TableUrls } from '../api/http/openapi';
import { AGENT_EXCHANGE_VERSION } from '../api/views/exchange';
import { buildTables } from '../api/tables';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** Each table at its own address, as a deployment with BASE_URL, API_URL and SITE_URL set serves them. */
export const LINT_URLS: TableUrls = {
  base: 'https://agents.proof-exchange.test',
  api: 'https://api.proof-exchange.test',
  site: 'https://proof-exchange.test',
};

/** Writes both documents into `dir`; returns their paths (exchange, platform). */
export function writeDocuments(dir: string, urls: TableUrls = LINT_URLS): [string, string] {
  const tables = buildTables();
  const exchange = join(dir, 'openapi.json');
  const platform = join(dir, 'platform.json');
  writeFileSync(exchange, JSON.stringify(exchangeDocument(tables, AGENT_EXCHANGE_VERSION, urls), null, 2));
  writeFileSync(platform, JSON.stringify(platformDocument(tables, AGENT_EXCHANGE_VERSION, urls), null, 2));
  return [exchange, platform];
}

/** Runs `redocly lint` with the project's redocly.yaml on the files. */
export function redoclyLint(files: string[], format: 'stylish' | 'json' = 'stylish') {
  const cli = createRequire(import.meta.url).resolve('@redocly/cli/bin/cli.js');
  return spawnSync(
    process.execPath,
    [cli, 'lint', `--config=${join(ROOT, 'redocly.yaml')}`, `--format=${format}`, ...files],
    { cwd: ROOT, encoding: 'utf8', stdio: format === 'json' ? 'pipe' : 'inherit' },
  );
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = mkdtempSync(join(tmpdir(), 'px-openapi-'));
  try {
    const { status } = redoclyLint(writeDocuments(dir));
    process.exitCode = status ?? 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
