// The A2A push notification config operations on a task (its job's one a2a webhook,
// shared/a2a/push-configs.ts), each for a caller who may open the task. Reads never show the token or
// credentials back.
import type {
  DeleteTaskPushNotificationConfigRequest,
  GetTaskPushNotificationConfigRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { TaskNotFoundError } from '@a2a-js/sdk/errors';
import {
  deletePushConfig,
  pushConfigFrom,
  pushConfigOf,
  registerPushConfig,
} from '../../shared/a2a/push-configs';
import type { PushConfig } from '../../shared/a2a/push-configs';
import { checkWebhookTarget } from '../../shared/deliveries/webhooks';
import type { AppDeps } from '../deps';
import type { A2ACaller } from './caller';
import { jobUrlOf, ownJob } from './caller';

const configView = (taskId: string, c: PushConfig): TaskPushNotificationConfig => ({
  tenant: '',
  id: c.id,
  taskId,
  url: c.url,
  token: '',
  authentication: c.authentication ? { scheme: c.authentication.scheme, credentials: '' } : undefined,
});

export const noPushConfig = (taskId: string, id: string) =>
  new TaskNotFoundError(`Task ${taskId} has no push notification config ${id.slice(0, 200)}.`);

export async function createPushConfig(
  deps: AppDeps,
  params: TaskPushNotificationConfig,
  caller: A2ACaller,
): Promise<TaskPushNotificationConfig> {
  const row = await ownJob(deps, params.taskId, caller);
  const config = pushConfigFrom(params, 'params');
  await checkWebhookTarget(config.url);
  const saved = await deps.db.transaction((trx) =>
    registerPushConfig(trx, row, config, jobUrlOf(deps, row.id, caller), { fromStart: false }),
  );
  return configView(row.id, saved);
}

export async function getPushConfig(
  deps: AppDeps,
  params: GetTaskPushNotificationConfigRequest,
  caller: A2ACaller,
): Promise<TaskPushNotificationConfig> {
  const row = await ownJob(deps, params.taskId, caller);
  const config = await pushConfigOf(deps.db, row.id);
  if (!config || config.id !== params.id) throw noPushConfig(row.id, params.id);
  return configView(row.id, config);
}

export async function listPushConfigs(
  deps: AppDeps,
  params: ListTaskPushNotificationConfigsRequest,
  caller: A2ACaller,
): Promise<ListTaskPushNotificationConfigsResponse> {
  const row = await ownJob(deps, params.taskId, caller);
  const config = await pushConfigOf(deps.db, row.id);
  return { configs: config ? [configView(row.id, config)] : [], nextPageToken: '' };
}

export async function removePushConfig(
  deps: AppDeps,
  params: DeleteTaskPushNotificationConfigRequest,
  caller: A2ACaller,
): Promise<void> {
  const row = await ownJob(deps, params.taskId, caller);
  if (!(await deletePushConfig(deps.db, row.id, params.id))) throw noPushConfig(row.id, params.id);
}
