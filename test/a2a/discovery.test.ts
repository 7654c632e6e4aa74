// A2A discovery, as an unmodified `@a2a-js/sdk` client with default options sees it: the agent card, and
// a message of text alone, answered with the skills and the data part each takes.
import { Role, TaskState } from '@a2a-js/sdk';
import type { Message, StreamResponse } from '@a2a-js/sdk';
import { describe, expect, it } from 'vitest';
import { base, client, count, digest, send, textMessage, useA2AStack } from './fixtures';

const { listServices } = await import('../../shared/jobs/catalog');
const { serviceOrThrow, validateServiceInput } = await import('../../shared/jobs/jobs');

useA2AStack();

describe('the agent card', () => {
  it('is A2A 1.0 on the two transports served, from BASE_URL, with no key required', async () => {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the card as JSON, before any decoder
    const raw = (await (await fetch(`${base}/.well-known/agent-card.json`)).json()) as any;
    expect(raw.supportedInterfaces).toEqual([
      { url: `${base}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url: `${base}/a2a/rest`, protocolBinding: 'HTTP+JSON', protocolVersion: '1.0' },
    ]);
    expect(raw.capabilities).toMatchObject({
      streaming: true,
      pushNotifications: true,
      extendedAgentCard: false,
    });
    expect(raw.capabilities.extensions[0].uri).toMatch(/a2a-x402/);
    expect(raw.securityRequirements ?? []).toEqual([]);
    expect(Object.keys(raw.securitySchemes)).toEqual(['taskToken', 'agentKey', 'licenseKey']);
    expect(raw.securitySchemes.taskToken.httpAuthSecurityScheme.description).toMatch(/metadata\.accessToken/);
    for (const s of raw.skills) expect(s.securityRequirements ?? []).toEqual([]);
    // The same card under each interface's address, without a credential or a version.
    for (const at of ['/a2a/jsonrpc', '/a2a/rest']) {
      const res = await fetch(`${base}${at}/.well-known/agent-card.json`);
      expect([res.status, await res.json()]).toEqual([200, raw]);
    }
    // What the SDK's default client made of it.
    expect(client.protocolVersion).toBe('1.0');
    const card = await client.getAgentCard();
    expect(card.skills.map((s) => s.id).sort()).toEqual(
      listServices()
        .map((s) => s.id)
        .sort(),
    );
  });

  it("has skill examples that the exchange's own validation accepts", async () => {
    const card = await client.getAgentCard();
    for (const skill of card.skills) {
      expect(skill.examples.length, skill.id).toBeGreaterThan(0);
      for (const example of skill.examples) {
        const { service, input } = JSON.parse(example) as { service: string; input: unknown };
        expect(service).toBe(skill.id);
        expect(() => validateServiceInput(serviceOrThrow(service), input)).not.toThrow();
      }
    }
  });

  it('answers a request without the A2A-Version it serves with the protocol error', async () => {
    const res = await fetch(`${base}/a2a/jsonrpc`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {} }),
    });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { error: { code: number } }).error.code).toBe(-32009);
  });
});

describe('a message of text alone', () => {
  it('is answered, through the SDK client, with the skills and the data part each takes; no task is made', async () => {
    const jobs = await count('jobs');
    const reply = await client.sendMessage({
      tenant: '',
      message: textMessage('hello, what can you do?'),
      configuration: undefined,
      metadata: undefined,
    });
    expect('messageId' in reply, 'a message, not a task').toBe(true);
    const message = reply as Message;
    expect(message.role).toBe(Role.ROLE_AGENT);
    const [text, data] = message.parts.map((p) => p.content);
    expect(text?.$case).toBe('text');
    expect(data?.$case).toBe('data');
    const skills = (data?.value as { skills: Array<{ skill: string; send: unknown }> }).skills;
    expect(skills.map((s) => s.skill)).toEqual(listServices().map((s) => s.id));
    for (const s of listServices()) expect(String(text?.value)).toContain(s.id);
    // Each data part it shows is one the exchange takes.
    for (const { send: part } of skills) {
      const { service, input } = part as { service: string; input: unknown };
      expect(() => validateServiceInput(serviceOrThrow(service), input)).not.toThrow();
    }
    expect(await count('jobs')).toBe(jobs);

    // Streamed, the same reply is the stream's one event.
    const events: StreamResponse[] = [];
    for await (const e of client.sendMessageStream({
      tenant: '',
      message: textMessage('hello'),
      configuration: undefined,
      metadata: undefined,
    }))
      events.push(e as StreamResponse);
    expect(events.map((e) => e.payload?.$case)).toEqual(['message']);
    expect(await count('jobs')).toBe(jobs);
  });

  it('is a request when the text is the JSON of one: the task runs', async () => {
    const d = await digest();
    const task = await send(
      client,
      textMessage(JSON.stringify({ service: 'attest.timestamp', input: { digest: d } })),
    );
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(JSON.stringify(task.artifacts[0]!.parts[0]!.content?.value)).toContain(d);
  });
});
