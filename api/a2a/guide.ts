// The answer to a message of text alone that is not a request: no task is made, and the reply (a
// Message from the agent) names each skill with the data part that starts it, its price and where its
// input's JSON Schema is, so a client that began with "hello" knows what to send next.
import { randomUUID } from 'node:crypto';
import { Role } from '@a2a-js/sdk';
import type { Message } from '@a2a-js/sdk';
import { textPart } from '../../shared/a2a/tasks';
import { listServices } from '../../shared/jobs/catalog';

const priceOf = (cents: number) => (cents === 0 ? 'free' : `${cents} USD cents, paid with x402`);

export function guidanceFor(message: Pick<Message, 'contextId'>, base: string): Message {
  const skills = listServices().map((s) => ({
    skill: s.id,
    name: s.name,
    price: priceOf(s.priceUsdCents),
    send: { service: s.id, input: s.examples?.[0] ?? {} },
  }));
  const schemas = `${base}/api/services`;
  const text = [
    'This agent runs one service per skill of its agent card. To start a task, send a message with one data part {"service": "<skill>", "input": {…}} (or that JSON as the text). The skills, each with a data part it takes:',
    ...skills.map((s) => `- ${s.skill} (${s.name}; ${s.price}): ${JSON.stringify(s.send)}`),
    `Each input's JSON Schema: ${schemas}`,
  ].join('\n');
  return {
    messageId: randomUUID(),
    contextId: message.contextId || randomUUID(),
    taskId: '',
    role: Role.ROLE_AGENT,
    parts: [
      textPart(text),
      {
        content: { $case: 'data', value: { skills, schemas } },
        mediaType: 'application/json',
        filename: '',
        metadata: undefined,
      },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}
