// The A2A endpoints: the SDK's JSON-RPC and HTTP+JSON transports over one JobTaskHandler, behind the
// exchange's own gates. What concerns the HTTP request as such (a credential that is not ours, a body
// over the limit) is answered as an RFC 9457 problem like anywhere else; what concerns the A2A request
// (JSON that does not parse, a control character, a malformed message) in the transport's own error
// form, before the SDK reads it.
import { A2A_CONTENT_TYPE } from '@a2a-js/sdk';
import { A2A_ERROR_CODE, restStatusFor, toJsonRpcError, toRestErrorBody } from '@a2a-js/sdk/errors';
import { validateVersion } from '@a2a-js/sdk/server';
import { jsonRpcHandler, restHandler } from '@a2a-js/sdk/server/express';
import cors from 'cors';
import express from 'express';
import type { Request, RequestHandler, Response } from 'express';
import { z } from 'zod';
import { AppError, unauthorized, validationFailed } from '../../shared/platform/errors';
import type { AppDeps } from '../deps';
import { requireScope } from '../../shared/licensing/scopes';
import { requireOperatorRole, authenticate, bearerToken } from '../http/auth';
import { closedSignal } from '../http/closed';
import { guardInput } from '../http/input-guard';
import { sendProblem, toAppError } from '../http/problem';
import { A2A_JSONRPC_PATH, A2A_REST_PATH, CARD_PATH, agentCard, agentCardHandler } from './card';
import { toA2AError } from './errors';
import { A2ACaller } from './caller';
import { JobTaskHandler } from './handler';

type Transport = 'jsonrpc' | 'rest';
/** The interfaces and versions served, whatever the address. */
const servedCard = agentCard('');

type RpcId = string | number | null;
const isRpcId = (id: unknown): id is RpcId =>
  id === null || typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id));

/**
 * The JSON-RPC 2.0 envelope checked before the SDK reads it (the SDK answers an invalid request with
 * -32602 and replies to notifications; docs/a2a.md, Upstream): a body that is not a request object, a
 * `jsonrpc` other than "2.0", a missing method, an id that is not a string, an integer or null, or
 * params that are not structured are an invalid request (-32600, with the request's id when it has a
 * valid one); a valid request without an id is a notification, answered with nothing.
 */
function rpcEnvelope(body: unknown): { invalid: string; id: RpcId } | 'notification' | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    return {
      invalid: Array.isArray(body)
        ? 'Batch requests are not taken: send one request per call.'
        : 'The body is not a JSON-RPC request object.',
      id: null,
    };
  }
  const rpc = body as Record<string, unknown>;
  if ('id' in rpc && !isRpcId(rpc.id))
    return { invalid: 'The id must be a string, an integer or null.', id: null };
  const id = 'id' in rpc ? (rpc.id as RpcId) : null;
  if (rpc.jsonrpc !== '2.0') return { invalid: 'jsonrpc must be exactly "2.0".', id };
  if (typeof rpc.method !== 'string' || !rpc.method) return { invalid: 'The request names no method.', id };
  if ('params' in rpc && (rpc.params === null || typeof rpc.params !== 'object')) {
    return { invalid: 'params must be an object.', id };
  }
  return 'id' in rpc ? undefined : 'notification';
}

/** The operations on existing tasks: nothing but a credential (a key, a task's token) opens any. */
const TASK_METHODS = new Set([
  'GetTask',
  'ListTasks',
  'CancelTask',
  'SubscribeToTask',
  'CreateTaskPushNotificationConfig',
  'GetTaskPushNotificationConfig',
  'ListTaskPushNotificationConfigs',
  'DeleteTaskPushNotificationConfig',
]);

function needsCredential(req: Request, transport: Transport): boolean {
  if (transport === 'jsonrpc') return TASK_METHODS.has((req.body as { method?: string }).method ?? '');
  return /^\/tasks(\/|$)/.test(req.path);
}

/** Answers an A2A-level refusal in the transport's own error form. */
function sendA2AError(req: Request, res: Response, transport: Transport, err: unknown): void {
  const error = toA2AError(err);
  if (transport === 'jsonrpc') {
    const id = (req.body as { id?: unknown } | undefined)?.id;
    res.status(200).json({
      jsonrpc: '2.0',
      id: typeof id === 'string' || (typeof id === 'number' && Number.isInteger(id)) ? id : null,
      error: toJsonRpcError(error),
    });
    return;
  }
  const status = restStatusFor(error);
  res
    .status(status)
    .type(A2A_CONTENT_TYPE)
    .send(JSON.stringify(toRestErrorBody(error, status)));
}

// The SDK's decoders index into every element of a message's `parts`: a null there would surface as
// an internal error, so the shape is checked first (fields stay open: A2A readers ignore the unknown).
const messageShape = z
  .object(
    { parts: z.array(z.looseObject({}), 'parts must be a list of objects').optional() },
    'must be an object',
  )
  .loose()
  .nullish();

function checkShape(req: Request, transport: Transport): void {
  const body = req.body as Record<string, unknown> | undefined;
  if (!body || typeof body !== 'object') return;
  let message: unknown;
  let where: string;
  if (transport === 'jsonrpc') {
    if (body.method !== 'SendMessage' && body.method !== 'SendStreamingMessage') return;
    message = (body.params as Record<string, unknown> | undefined)?.message;
    where = 'params.message';
  } else {
    if (!/\/message:(send|stream)$/.test(req.path)) return;
    message = body.message;
    where = 'message';
  }
  const parsed = messageShape.safeParse(message);
  if (!parsed.success) {
    throw validationFailed(
      parsed.error.issues.map((i) => ({ path: [where, ...i.path].join('.'), message: i.message })),
      'The message is malformed.',
    );
  }
  const legacy = a03Shape(parsed.data);
  if (legacy.length)
    throw validationFailed(
      legacy.map((l) => ({ path: `${where}.${l.path}`, message: l.message })),
      'This is an A2A 0.3 message; this agent speaks A2A 1.0: a part is {"text": …}, {"data": {…}} or {"url": …} with no "kind", and the role is "ROLE_USER" (send A2A-Version: 1.0; docs/a2a.md).',
    );
}

/** What marks a message as A2A 0.3's (parts with `kind`, role `user`, `kind: "message"`), each where. */
function a03Shape(
  message: { parts?: Array<Record<string, unknown>> | undefined; [k: string]: unknown } | null | undefined,
) {
  const found: Array<{ path: string; message: string }> = [];
  if (!message) return found;
  if (message.kind === 'message') found.push({ path: 'kind', message: 'A2A 0.3 only: 1.0 has no "kind"' });
  if (message.role === 'user' || message.role === 'agent')
    found.push({ path: 'role', message: `A2A 0.3's "${message.role}": 1.0 says "ROLE_USER"` });
  for (const [i, part] of (message.parts ?? []).entries())
    if (typeof part.kind === 'string')
      found.push({
        path: `parts.${i}.kind`,
        message: `A2A 0.3's part kind "${part.kind.slice(0, 20)}": in 1.0 the part is {"${part.kind === 'file' ? 'url' : part.kind.slice(0, 20)}": …} itself`,
      });
  return found;
}

/**
 * Before the SDK: the caller's credential (optional: an agent or license key, the operator token, or a
 * task's access token; a bad one is 401), the body parsed within the exchange's limit, the input guard
 * (NUL and other control characters, depth), the message's shape. The caller rides to the handler as
 * the SDK's `User`; whether its credential opens a task is the handler's to say, per task.
 */
function prelude(deps: AppDeps, transport: Transport): RequestHandler {
  const parse = express.json({
    limit: deps.bodyLimitBytes,
    // Any JSON: one that is no request object is the envelope check's to answer (-32600), not a parse error.
    strict: false,
    type: ['application/json', A2A_CONTENT_TYPE],
  });
  const binding = transport === 'jsonrpc' ? 'JSONRPC' : 'HTTP+JSON';
  return (req, res, next) => {
    const header = req.headers.authorization;
    if (header !== undefined && !/^Bearer\s+\S+\s*$/i.test(header)) {
      sendProblem(
        res,
        unauthorized('A2A calls take Authorization: Bearer <key> only (or none).', {
          'WWW-Authenticate': 'Bearer',
        }),
        req.originalUrl,
      );
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > deps.bodyLimitBytes) {
      sendProblem(
        res,
        new AppError(
          413,
          'payload_too_large',
          `The request body is larger than ${deps.bodyLimitBytes} bytes.`,
        ),
        req.originalUrl,
      );
      return;
    }
    parse(req, res, (parseError?: unknown) => {
      if (parseError) {
        const problem = toAppError(parseError);
        if (problem.status === 413) sendProblem(res, problem, req.originalUrl);
        else if (problem.code === 'malformed_json' && transport === 'jsonrpc') {
          res.status(200).json({
            jsonrpc: '2.0',
            id: null,
            error: { code: A2A_ERROR_CODE.PARSE_ERROR, message: 'Invalid JSON payload.' },
          });
        } else sendA2AError(req, res, transport, problem);
        return;
      }
      if (transport === 'jsonrpc') {
        const envelope = rpcEnvelope(req.body);
        if (envelope === 'notification') {
          // No reply, and nothing done: every A2A method answers, and its answer would reach nobody.
          res.status(204).end();
          return;
        }
        if (envelope) {
          res.status(200).json({
            jsonrpc: '2.0',
            id: envelope.id,
            error: { code: A2A_ERROR_CODE.INVALID_REQUEST, message: `Invalid request: ${envelope.invalid}` },
          });
          return;
        }
      }
      void (async () => {
        // The credential first: one that is not valid is refused before anything else is read, and an
        // operation on tasks, which only a credential can open, is refused without one.
        let principal;
        try {
          if (!bearerToken(req) && needsCredential(req, transport)) {
            throw unauthorized(
              'Tasks open only to the key that created them, or to their access token (Authorization: Bearer …).',
              { 'WWW-Authenticate': 'Bearer' },
            );
          }
          principal = await authenticate(req, deps, 'job');
          // A task is an exchange job, paid from the license's credit: an organization key needs admin.
          if (principal.kind === 'license') requireScope(principal.scopes, 'admin', undefined);
          // A named operator key reads tasks over the REST binding's GETs by any role; a JSON-RPC call
          // can send, cancel or configure, so it takes an admin.
          if (principal.kind === 'operator')
            requireOperatorRole(principal, req.method === 'GET' ? 'read-only' : 'admin');
        } catch (err) {
          sendProblem(res, toAppError(err), req.originalUrl);
          return;
        }
        try {
          // The version, as the SDK would (a request without A2A-Version asks for 0.3).
          validateVersion(req.header('A2A-Version') || '0.3', servedCard, binding);
          if (req.body !== undefined) guardInput(req.body, 'body');
          checkShape(req, transport);
        } catch (err) {
          sendA2AError(req, res, transport, err);
          return;
        }
        res.locals.a2aCaller = new A2ACaller(principal, req, closedSignal(res));
        next();
      })();
    });
  };
}

const userBuilder = async (req: Request) => req.res!.locals.a2aCaller as A2ACaller;

export function a2aRouter(deps: AppDeps): express.Router {
  const requestHandler = new JobTaskHandler(deps);
  const router = express.Router();
  router.use(
    '/a2a',
    cors({
      origin: '*',
      allowedHeaders: ['Authorization', 'Content-Type', 'A2A-Version', 'A2A-Extensions', 'X-Referral-Code'],
      exposedHeaders: ['A2A-Extensions', 'Retry-After', 'X-Request-Id'],
      maxAge: 600,
    }),
  );
  // The card also under each interface's own address: a client (a2a-tck among them) given an
  // interface URL looks for the card there. It is the same public card, and no request reaches a
  // transport this way.
  router.get([`${A2A_JSONRPC_PATH}${CARD_PATH}`, `${A2A_REST_PATH}${CARD_PATH}`], agentCardHandler(deps));
  router.use(A2A_JSONRPC_PATH, prelude(deps, 'jsonrpc'), jsonRpcHandler({ requestHandler, userBuilder }));
  router.use(A2A_REST_PATH, prelude(deps, 'rest'), restHandler({ requestHandler, userBuilder }));
  return router;
}
