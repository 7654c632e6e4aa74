// The A2A agent card (protocol 1.0), served at /.well-known/agent-card.json: the two transports the
// exchange serves, what it can do, the optional keys, and one skill per service with inputs the
// exchange accepts.
import { AgentCard } from '@a2a-js/sdk';
import type { AgentSkill } from '@a2a-js/sdk';
import type { RequestHandler } from 'express';
import { A2A_PROTOCOL_VERSION, X402_EXTENSION_URI } from '../../shared/a2a/tasks';
import { listServices } from '../../shared/jobs/catalog';
import type { AppDeps } from '../deps';
import { origin } from '../http/links';
import { AGENT_EXCHANGE_VERSION, SERVICE_DESCRIPTION, SERVICE_NAME } from '../views/exchange';

export const A2A_JSONRPC_PATH = '/a2a/jsonrpc';
export const A2A_REST_PATH = '/a2a/rest';
/** Where A2A puts an agent's card: at the host's root, and here also under each interface's address. */
export const CARD_PATH = '/.well-known/agent-card.json';

/** How a message asks for a job: the data part every skill's examples show. */
export const exampleMessage = (service: string, input: Record<string, unknown>) =>
  JSON.stringify({ service, input });

function skills(base: string): AgentSkill[] {
  return listServices().map((s) => {
    const price =
      s.priceUsdCents === 0
        ? 'Free: the task runs at once.'
        : `Price: ${s.priceUsdCents} USD cents; the task answers input-required with x402 payment requirements until it is paid.`;
    return {
      id: s.id,
      name: s.name,
      description: `${s.description} ${price} Send a message with one data part {"service":"${s.id}","input":{…}}; the input's JSON Schema is at ${base}/api/services.`,
      tags: [s.id.split('.')[0]!, s.priceUsdCents === 0 ? 'free' : 'paid'],
      examples: (s.examples ?? []).map((input) => exampleMessage(s.id, input)),
      inputModes: ['application/json', 'text/plain'],
      outputModes: ['application/json', 'text/plain'],
      // No key is needed for any skill: a priced one needs payment, not a credential.
      securityRequirements: [],
    };
  });
}

/** The card for a base address (the configured BASE_URL, else the request's own origin). */
export function agentCard(base: string): AgentCard {
  return {
    name: SERVICE_NAME,
    description: `${SERVICE_DESCRIPTION} Each skill is a service: send a message with one data part {"service", "input"}; the task is the job.`,
    supportedInterfaces: [
      {
        url: `${base}${A2A_JSONRPC_PATH}`,
        protocolBinding: 'JSONRPC',
        protocolVersion: A2A_PROTOCOL_VERSION,
        tenant: '',
      },
      {
        url: `${base}${A2A_REST_PATH}`,
        protocolBinding: 'HTTP+JSON',
        protocolVersion: A2A_PROTOCOL_VERSION,
        tenant: '',
      },
    ],
    provider: { organization: SERVICE_NAME, url: base },
    version: AGENT_EXCHANGE_VERSION,
    documentationUrl: `${base}/docs`,
    capabilities: {
      streaming: true,
      pushNotifications: true,
      extendedAgentCard: false,
      extensions: [
        {
          uri: X402_EXTENSION_URI,
          description:
            "A priced task is input-required with x402 payment requirements in its status message metadata (standalone flow). The payer pays one of them on chain and submits the transaction to the job payment route named there, with the task's access token (or the key that created it); the task then runs.",
          required: false,
          params: undefined,
        },
      ],
    },
    // Keys are optional to send a message: none is required (securityRequirements is empty), and a
    // public service runs for anyone. A task opens only to the key that created it or to its access
    // token, as its job does on the HTTP API.
    securitySchemes: {
      taskToken: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            scheme: 'Bearer',
            bearerFormat: 'jt_…',
            description: `A task's access token: returned once, as metadata.accessToken of the task that the SendMessage (or SendStreamingMessage) creating it answers, and never again. GetTask, CancelTask, SubscribeToTask and the task's push notification configs need it, or the key that created the task; with another credential the task is not found, as one that does not exist, and without any the call is refused (401). It opens the task's job on the HTTP API too (${base}/api/jobs/{id}, its events and its payment route).`,
          },
        },
      },
      agentKey: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            scheme: 'Bearer',
            bearerFormat: 'ak_…',
            description: `Optional. An agent API key from POST ${base}/api/registry/register: the task is tied to the agent, and that key opens it (read, cancel, push notification configs) as its access token does.`,
          },
        },
      },
      licenseKey: {
        scheme: {
          $case: 'httpAuthSecurityScheme',
          value: {
            scheme: 'Bearer',
            bearerFormat: 'lk_…',
            description:
              'Optional. A license key, or an organization key (rk_…) with the admin scope: the license’s prepaid credit, when enough, pays a priced task at once; the key opens the tasks it creates. An organization key without admin is refused (403 insufficient_scope).',
          },
        },
      },
    },
    securityRequirements: [],
    defaultInputModes: ['application/json', 'text/plain'],
    defaultOutputModes: ['application/json', 'text/plain'],
    skills: skills(base),
    signatures: [],
  };
}

/** GET /.well-known/agent-card.json: the card in A2A's JSON form, for this request's base address. */
export function agentCardHandler(deps: AppDeps): RequestHandler {
  return (req, res) => {
    res.setHeader('Cache-Control', 'public, max-age=300');
    res.json(AgentCard.toJSON(agentCard(origin(req, deps, 'base'))));
  };
}
