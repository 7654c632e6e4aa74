// Why a process could not start, said in one line a newcomer can act on: what failed, then how to fix it.
// Used by `npm start` for the stores it resolves and by each process type for its own start-up.

export class StartupFailure extends Error {
  constructor(
    readonly what: string,
    readonly fix: string,
    /** Said as one plain line on stderr (with nothing on stdout) rather than as a fatal log line. */
    readonly plain = false,
    /** The process's exit status: 1, or 78 (EX_CONFIG) for what the deployment's configuration fixes. */
    readonly exitCode = 1,
  ) {
    super(`${what}: ${fix}`);
    this.name = 'StartupFailure';
  }
}

/**
 * A production start refused for reasons the operator fixes in the deployment: one line per problem,
 * each naming its fix, and nothing else on stderr.
 */
export class StartupRefused extends StartupFailure {
  constructor(
    readonly lines: readonly string[],
    exitCode = 1,
  ) {
    super(lines.join(' '), 'see the lines above', true, exitCode);
    this.name = 'StartupRefused';
  }
}

type SystemError = Error & { code?: string; address?: string; port?: number; syscall?: string };

const codeOf = (err: unknown): string | undefined =>
  err && typeof err === 'object' && 'code' in err ? String((err as SystemError).code) : undefined;

/** A listen() failure: a port taken, a port that needs privileges, an address this machine lacks. */
export function explainListenError(
  err: unknown,
  where: { port: number; host: string; variable: string },
): StartupFailure | undefined {
  switch (codeOf(err)) {
    case 'EADDRINUSE':
      return new StartupFailure(
        `port ${where.port} is already in use`,
        `stop what listens there (lsof -i :${where.port}), or choose another port with ${where.variable}`,
      );
    case 'EACCES':
      return new StartupFailure(
        `no permission to listen on port ${where.port}`,
        `ports below 1024 need privileges; choose a port above 1023 with ${where.variable}`,
      );
    case 'EADDRNOTAVAIL':
      return new StartupFailure(
        `${where.host} is not an address of this machine`,
        'set HOST to 127.0.0.1 (this machine only) or 0.0.0.0 (every interface)',
      );
    default:
      return undefined;
  }
}

/** A file or folder the launcher could not create or write (DATA_DIR and what it holds). */
export function explainFileError(err: unknown): StartupFailure | undefined {
  const e = err as SystemError & { path?: string };
  if (!e?.path || !['EACCES', 'EPERM', 'EROFS', 'ENOENT', 'ENOTDIR', 'ENOSPC'].includes(codeOf(err) ?? ''))
    return undefined;
  return new StartupFailure(
    `cannot ${e.syscall ?? 'use'} ${e.path} (${e.code})`,
    'choose a writable DATA_DIR, or fix the permissions of that folder',
  );
}

/** A connection to Postgres that failed, by its network error or Postgres SQLSTATE. */
export function explainPostgresError(err: unknown, source: string, target: string): StartupFailure {
  const code = codeOf(err);
  const message = (err as Error)?.message ?? String(err);
  const unset = source === 'DATABASE_URL' ? ', or unset DATABASE_URL to use an embedded Postgres' : '';
  switch (code) {
    case 'ECONNREFUSED':
      return new StartupFailure(
        `Postgres at ${target} (${source}) refused the connection`,
        `start Postgres there${unset}`,
      );
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return new StartupFailure(
        `the Postgres host in ${source} (${target}) does not resolve`,
        `fix ${source}`,
      );
    case 'ETIMEDOUT':
    case 'ECONNRESET':
      return new StartupFailure(
        `Postgres at ${target} (${source}) did not answer`,
        `check that it runs and that nothing blocks the port${unset}`,
      );
    case '28P01':
    case '28000':
      return new StartupFailure(
        `Postgres at ${target} (${source}) refused the login: ${message}`,
        `fix the user or password in ${source}`,
      );
    case '3D000':
      return new StartupFailure(
        `Postgres at ${target} (${source}): ${message}`,
        `create it (createdb) or name an existing database in ${source}`,
      );
    case '57P03':
      return new StartupFailure(`Postgres at ${target} is starting up or shutting down`, 'try again shortly');
    default:
      if (/timeout/i.test(message)) {
        return new StartupFailure(
          `Postgres at ${target} (${source}) did not answer in time`,
          `check that it runs${unset}`,
        );
      }
      return new StartupFailure(`Postgres at ${target} (${source}) failed: ${message}`, `check ${source}`);
  }
}

/** The host:port of a connection URL, for messages (never the password). */
export function urlTarget(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || (u.protocol.startsWith('redis') ? 6379 : 5432)}`;
  } catch {
    return 'an unparseable URL';
  }
}
