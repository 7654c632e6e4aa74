// A job's webhook, as createJob takes it and answers it once (deliveries are signed with its secret).
import { z } from 'zod';

export const jobWebhookRequestSchema = z
  .strictObject({
    url: z
      .url({ protocol: /^https?$/ })
      .max(2000)
      .describe('Receives a signed POST for each state change of the job and of its payments'),
  })
  .meta({ id: 'JobWebhookRequest' });

export const jobWebhookSchema = z
  .object({
    url: z.string(),
    secret: z
      .string()
      .describe(
        'HMAC-SHA256 key of the X-Delivery-Signature header of every delivery; shown once, never again',
      ),
    events: z.array(z.string()).describe('The event names deliveries carry'),
  })
  .meta({ id: 'JobWebhook' });
