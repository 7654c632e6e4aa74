// Bull Board for operators at /admin/queues, behind the operator token (Bearer, or Basic with the token as password).
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import express from 'express';
import type { AppDeps } from '../deps';
import { sendProblem } from './problem';
import { bearerToken, isOperator } from './auth';
import { AppError } from '../../shared/errors';

export const ADMIN_PATH = '/admin/queues';

export function adminRouter(deps: AppDeps): express.Router {
  const router = express.Router();
  const serverAdapter = new ExpressAdapter();
  serverAdapter.setBasePath(ADMIN_PATH);
  createBullBoard({
    queues: deps.queues.all().map((q) => new BullMQAdapter(q)),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'proof-exchange queues' } },
  });
  router.use(ADMIN_PATH, (req, res, next) => {
    if (!deps.operatorToken) {
      sendProblem(
        res,
        new AppError(503, 'operator_disabled', 'Bull Board is disabled: OPERATOR_TOKEN is not configured.'),
      );
      return;
    }
    if (!isOperator(bearerToken(req), deps)) {
      sendProblem(
        res,
        new AppError(
          401,
          'unauthorized',
          'Bull Board needs the operator token (Bearer, or as the Basic password).',
          {
            headers: { 'WWW-Authenticate': 'Basic realm="proof-exchange operator", charset="UTF-8"' },
          },
        ),
      );
      return;
    }
    next();
  });
  router.use(ADMIN_PATH, serverAdapter.getRouter() as express.Router);
  return router;
}
