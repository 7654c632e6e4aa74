// `npm run admin -- licenses issue|list|show|suspend|resume|revoke|rotate …`, `org-keys list|revoke …`,
// `agent-keys list|revoke|rotate …`, `operators issue|list|revoke|rotate …`, `audit`: the operator's
// hand on tenants and on operators' keys, through the operator API (/api/v1/admin/…) of the service at
// PX_URL (or --url) with OPERATOR_TOKEN or a named operator key (or --token). A new key is printed once, on its own
// line; the service keeps only its hash. docs/tenants.md has the procedures. Every string the service
// stored is printed escaped (shared/platform/text.ts): a name holding a CR or a bidi override cannot
// overwrite or reorder the operator's rows.
import { randomBytes } from 'node:crypto';
import { env, serviceUrl } from '../shared/platform/env';
import { printable, printableJson } from '../shared/platform/text';
import { localOperatorToken, readLocalRun } from '../shared/platform/local-run';
import { unreachableLine } from './io';

const usage = `usage: npm run admin -- [--url URL] [--token TOKEN] [--json] <command>
  licenses issue --organization NAME --tier Starter|Business|Enterprise [--expires ISO] [--note TEXT] [--email EMAIL]
  licenses list [--organization NAME] [--status active|suspended|revoked|expired] [--limit N] [--cursor C]
  licenses show <licenseId>
  licenses suspend|resume|revoke|rotate <licenseId>
  org-keys list <licenseId> [--limit N] [--cursor C]
  org-keys revoke <licenseId> --key <keyId>
  agent-keys list [--agent agt_…] [--limit N] [--cursor C]
  agent-keys revoke|rotate <keyId>
  operators issue --name NAME --role read-only|support|admin
  operators list [--limit N] [--cursor C]
  operators revoke|rotate <operatorId>
  audit [--license lic_…] [--limit N] [--cursor C]
The service is PX_URL (else BASE_URL, else the npm start running from this checkout, else this machine's PORT) and the credential OPERATOR_TOKEN (else that npm start's own), unless --url and --token say otherwise. --token takes a named operator key (opk_…) too: read-only reads, support also suspends and resumes licenses and revokes keys, admin does everything.`;

export class UsageError extends Error {}

export interface AdminIo {
  out: (line: string) => void;
  err: (line: string) => void;
}

interface Parsed {
  words: string[];
  flags: Map<string, string>;
  json: boolean;
}

function parse(args: string[]): Parsed {
  const words: string[] = [];
  const flags = new Map<string, string>();
  let json = false;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--json') json = true;
    else if (a.startsWith('--')) {
      const value = args[i + 1];
      if (value === undefined || value.startsWith('--')) throw new UsageError(`${a} needs a value`);
      flags.set(a.slice(2), value);
      i++;
    } else words.push(a);
  }
  return { words, flags, json };
}

/** The flags a command takes, as query or body fields; any other flag is a usage error. */
function pick(flags: Map<string, string>, allowed: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of flags) {
    if (name === 'url' || name === 'token') continue;
    const field = allowed[name];
    if (!field) throw new UsageError(`unknown option --${name}`);
    out[field] = value;
  }
  return out;
}

interface Call {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string>;
  body?: Record<string, unknown>;
}

function route(words: string[], flags: Map<string, string>): Call {
  const [group, verb, id, ...extra] = words;
  if (extra.length) throw new UsageError(`unexpected ${extra.join(' ')}`);
  const one = (base: string) => {
    if (!id) throw new UsageError(`${group} ${verb} needs an id`);
    return `${base}/${encodeURIComponent(id)}`;
  };
  const none = () => {
    if (id) throw new UsageError(`unexpected ${id}`);
  };
  const paging = { limit: 'limit', cursor: 'cursor' };
  if (group === 'licenses') {
    switch (verb) {
      case 'issue': {
        none();
        const body: Record<string, unknown> = pick(flags, {
          organization: 'organization',
          tier: 'tier',
          expires: 'expiresAt',
          note: 'note',
          email: 'email',
        });
        if (!body.organization || !body.tier) throw new UsageError('issue needs --organization and --tier');
        return { method: 'POST', path: '/api/v1/admin/licenses', body };
      }
      case 'list':
        none();
        return {
          method: 'GET',
          path: '/api/v1/admin/licenses',
          query: pick(flags, { ...paging, organization: 'organization', status: 'status' }),
        };
      case 'show':
        pick(flags, {});
        return { method: 'GET', path: one('/api/v1/admin/licenses') };
      case 'suspend':
      case 'resume':
      case 'revoke':
      case 'rotate':
        pick(flags, {});
        return { method: 'POST', path: `${one('/api/v1/admin/licenses')}/${verb}` };
      default:
        break;
    }
  }
  if (group === 'org-keys') {
    switch (verb) {
      case 'list':
        return {
          method: 'GET',
          path: `${one('/api/v1/admin/licenses')}/keys`,
          query: pick(flags, paging),
        };
      case 'revoke': {
        const keyId = flags.get('key');
        pick(flags, { key: 'key' });
        if (!keyId) throw new UsageError('org-keys revoke needs --key key_…');
        return {
          method: 'POST',
          path: `${one('/api/v1/admin/licenses')}/keys/${encodeURIComponent(keyId)}/revoke`,
        };
      }
      default:
        break;
    }
  }
  if (group === 'agent-keys') {
    switch (verb) {
      case 'list':
        none();
        return {
          method: 'GET',
          path: '/api/v1/admin/agent-keys',
          query: pick(flags, { ...paging, agent: 'agentId' }),
        };
      case 'revoke':
      case 'rotate':
        pick(flags, {});
        return { method: 'POST', path: `${one('/api/v1/admin/agent-keys')}/${verb}` };
      default:
        break;
    }
  }
  if (group === 'operators') {
    switch (verb) {
      case 'issue': {
        none();
        const body: Record<string, unknown> = pick(flags, { name: 'name', role: 'role' });
        if (!body.name || !body.role) throw new UsageError('operators issue needs --name and --role');
        return { method: 'POST', path: '/api/v1/admin/operators', body };
      }
      case 'list':
        none();
        return { method: 'GET', path: '/api/v1/admin/operators', query: pick(flags, paging) };
      case 'revoke':
      case 'rotate':
        pick(flags, {});
        return { method: 'POST', path: `${one('/api/v1/admin/operators')}/${verb}` };
      default:
        break;
    }
  }
  if (group === 'audit' && verb === undefined) {
    return {
      method: 'GET',
      path: '/api/v1/admin/audit',
      query: pick(flags, { ...paging, license: 'licenseId' }),
    };
  }
  throw new UsageError(`unknown command: ${words.join(' ') || '(none)'}`);
}

type Json = Record<string, unknown>;

/** A field of a reply, as the terminal may show it. */
const shown = (v: unknown): string => printable(String(v));

function licenseLine(l: Json): string {
  return [
    shown(l.licenseId),
    shown(l.tier).padEnd(10),
    shown(l.status).padEnd(9),
    `until ${shown(l.expiresAt)}`,
    shown(l.source).padEnd(8),
    shown(l.organization),
    l.note ? `— ${shown(l.note)}` : '',
  ]
    .filter((p) => p !== '')
    .join('  ');
}

function agentKeyLine(k: Json): string {
  const state = k.revokedAt ? `revoked ${shown(k.revokedAt)}` : 'in use';
  return `${shown(k.keyId)}  ${shown(k.agentId)}  ${state}  last used ${shown(k.lastUsedAt ?? 'never')}  ${shown(k.agentName)}`;
}

function organizationKeyLine(k: Json): string {
  const state = k.revokedAt ? `revoked ${shown(k.revokedAt)}` : 'in use';
  const scopes = shown((k.scopes as string[]).join(','));
  return `${shown(k.keyId)}  ${shown(k.prefix)}  ${scopes}  ${state}  last used ${shown(k.lastUsedAt ?? 'never')}  ${shown(k.name)}`;
}

function operatorLine(o: Json): string {
  const state = o.revokedAt ? `revoked ${shown(o.revokedAt)}` : 'in use';
  return `${shown(o.operatorId)}  ${shown(o.role).padEnd(9)}  ${shown(o.prefix)}  ${state}  last used ${shown(o.lastUsedAt ?? 'never')}  ${shown(o.name)}`;
}

/** What an empty page of a list is, in words. */
function emptyList(path: string): string {
  if (path.endsWith('/keys')) return 'this license has no organization keys';
  if (path.includes('/agent-keys')) return 'no agent keys';
  if (path.includes('/audit')) return 'no audited actions';
  if (path.includes('/operators'))
    return 'no operator keys: the bootstrap OPERATOR_TOKEN is the only operator';
  return 'no licenses';
}

/** What a reply says to a person: one line per item, the new key on a line of its own. */
function render(call: Call, body: Json, io: AdminIo): void {
  const items = body.items as Json[] | undefined;
  if (items) {
    if (!items.length) io.err(`# ${emptyList(call.path)}`);
    for (const item of items) {
      if ('operatorId' in item) io.out(operatorLine(item));
      else if ('licenseId' in item && 'tier' in item) io.out(licenseLine(item));
      else if ('agentId' in item) io.out(agentKeyLine(item));
      else if ('scopes' in item) io.out(organizationKeyLine(item));
      else io.out(`${shown(item.at)}  ${shown(item.actor)}  ${shown(item.action)}  ${shown(item.target)}`);
    }
    if (body.nextCursor) io.out(`# more: --cursor ${shown(body.nextCursor)}`);
    return;
  }
  const license = (body.license ?? ('licenseId' in body ? body : undefined)) as Json | undefined;
  if (license) io.out(licenseLine(license));
  if (body.key) io.out(agentKeyLine(body.key as Json));
  if (body.operator) io.out(operatorLine(body.operator as Json));
  if (!license && !body.operator && 'operatorId' in body) io.out(operatorLine(body));
  if (!license && !body.key && 'agentId' in body) io.out(agentKeyLine(body));
  if (!license && !body.key && 'scopes' in body) io.out(organizationKeyLine(body));
  const secret = (body.licenseKey ?? body.apiKey ?? body.operatorKey) as string | undefined;
  if (secret) {
    io.err(
      `# the new key, shown this once (${call.path.endsWith('rotate') ? 'the old one is refused from now on' : 'keep it'}):`,
    );
    io.out(shown(secret));
  }
}

/**
 * The service and token from the settings; where they leave one unset, those of the npm start running
 * from this checkout (DATA_DIR/running.json), saying so.
 */
function localDefaults(): { url: string; token?: string | undefined; from?: string } {
  const run = env.PX_URL && env.OPERATOR_TOKEN ? undefined : readLocalRun(env.DATA_DIR);
  const url = env.PX_URL || env.BASE_URL || !run ? serviceUrl() : run.serviceUrl;
  if (env.OPERATOR_TOKEN || !run) return { url, token: env.OPERATOR_TOKEN };
  const token = localOperatorToken(run);
  return {
    url,
    token,
    ...(token ? { from: `the operator token of the npm start running here (pid ${run.pid})` } : {}),
  };
}

/** Runs one command; returns the exit status (0 done, 1 refused by the service, 2 usage). */
export async function runAdmin(
  args: string[],
  io: AdminIo = {
    out: (l) => process.stdout.write(`${l}\n`),
    err: (l) => process.stderr.write(`${l}\n`),
  },
  defaults: { url?: string | undefined; token?: string | undefined; from?: string } = localDefaults(),
): Promise<number> {
  if (args.includes('--help') || args.includes('-h')) {
    io.out(usage);
    return 0;
  }
  let call: Call;
  let parsed: Parsed;
  try {
    parsed = parse(args);
    call = route(parsed.words, parsed.flags);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.err(`${err.message}\n${usage}`);
    return 2;
  }
  const base = parsed.flags.get('url') ?? defaults.url;
  const token = parsed.flags.get('token') ?? defaults.token;
  if (!base || !token) {
    io.err(
      `set OPERATOR_TOKEN (or pass --token): no npm start runs from this checkout to take its token from\n${usage}`,
    );
    return 2;
  }
  if (defaults.from && !parsed.flags.has('token')) io.err(`# ${defaults.from}`);
  const url = new URL(`${base.replace(/\/+$/, '')}${call.path}`);
  for (const [k, v] of Object.entries(call.query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { Authorization: `Bearer ${token}`, Accept: 'application/json' };
  if (call.method === 'POST') {
    headers['Content-Type'] = 'application/json';
    headers['Idempotency-Key'] = randomBytes(18).toString('base64url');
  }
  let res: Response;
  try {
    res = await fetch(url, {
      method: call.method,
      headers,
      ...(call.method === 'POST' ? { body: JSON.stringify(call.body ?? {}) } : {}),
    });
  } catch (err) {
    const line = unreachableLine(err, url);
    if (!line) throw err;
    io.err(line);
    return 1;
  }
  const text = await res.text();
  let body: Json;
  try {
    body = JSON.parse(text) as Json;
  } catch {
    io.err(`${res.status}: ${printable(text.slice(0, 200))}`);
    return 1;
  }
  if (!res.ok) {
    io.err(`${res.status} ${shown(body.code ?? '')}: ${shown(body.detail ?? body.title ?? '')}`);
    return 1;
  }
  if (parsed.json) io.out(printableJson(body, 2));
  else render(call, body, io);
  return 0;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  runAdmin(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: Error) => {
      process.stderr.write(`${err.message}\n`);
      process.exitCode = 1;
    },
  );
}
