// A small A2A 0.3 test agent built only from the official JS SDK of the 0.3 line
// (@a2a-js/sdk 0.3.14, its express handlers), for the Rust integration tests
// (tests/integration/common/sdk_agent.rs, `SdkAgent::start_js03`) and the wire captures
// (tests/peers/v03/capture.py). It binds 127.0.0.1:0 itself and prints ONE JSON line on stdout
// before serving:
//
//   {"event":"listening","addr":"127.0.0.1:PORT","card_url":"http://127.0.0.1:PORT/.well-known/agent-card.json"}
//
// Both bindings are served, JSON-RPC at /jsonrpc (jsonRpcHandler) and HTTP+JSON at /rest
// (restHandler); the card is the SDK's 0.3 shape (top-level `url` + `preferredTransport`,
// `additionalInterfaces` listing both, `protocolVersion` "0.3.0").
//
// Usage: node agent.mjs [--transport jsonrpc|rest] [--no-streaming] [--no-protocol-version]
//                       [--secret-skill] [--exit-on-stdin-eof]
//   --transport            the card's main interface (`url`/`preferredTransport`); default jsonrpc
//   --no-streaming         `capabilities.streaming: false` (the SDK then refuses message/stream)
//   --no-protocol-version  the card leaves `protocolVersion` out (as cards written before the
//                          field, or by hand, do; the SDK serves and answers it all the same)
//   --secret-skill         the authenticated extended card adds a skill `secret` (the public
//                          card never shows it), so a test sees which card was compiled
//
// What the agent does with a message's text:
//   "message ..."  answers with one agent Message (no task);
//   "hold ..."     opens a task and leaves it `working` until tasks/cancel (for cancel/resubscribe);
//   anything else  a task: working, one text artifact echoing the text, completed.
import express from 'express';
import { randomUUID } from 'node:crypto';
import {
  DefaultRequestHandler,
  InMemoryTaskStore,
} from '@a2a-js/sdk/server';
import {
  UserBuilder,
  agentCardHandler,
  jsonRpcHandler,
  restHandler,
} from '@a2a-js/sdk/server/express';

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const option = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const transport = option('--transport', 'jsonrpc');
if (!['jsonrpc', 'rest'].includes(transport)) {
  console.error(`--transport must be jsonrpc or rest, not ${transport}`);
  process.exit(2);
}
if (flag('--exit-on-stdin-eof')) {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.resume();
}

function buildCard(base) {
  const urls = { JSONRPC: `${base}/jsonrpc`, 'HTTP+JSON': `${base}/rest` };
  const main = transport === 'jsonrpc' ? 'JSONRPC' : 'HTTP+JSON';
  const other = main === 'JSONRPC' ? 'HTTP+JSON' : 'JSONRPC';
  return {
    name: 'JS SDK 0.3 echo',
    description: 'Echo agent built from the official @a2a-js/sdk 0.3.14',
    url: urls[main],
    preferredTransport: main,
    additionalInterfaces: [
      { url: urls[main], transport: main },
      { url: urls[other], transport: other },
    ],
    ...(flag('--no-protocol-version') ? {} : { protocolVersion: '0.3.0' }),
    version: '0.3.14',
    capabilities: { streaming: !flag('--no-streaming'), pushNotifications: true },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain'],
    skills: [
      {
        id: 'echo',
        name: 'Echo',
        description: 'echoes the text it is sent',
        tags: ['demo'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
      },
    ],
    supportsAuthenticatedExtendedCard: true,
  };
}

const textOf = (message) =>
  (message.parts || [])
    .filter((p) => p.kind === 'text')
    .map((p) => p.text)
    .join('');

const status = (taskId, contextId, state, final) => ({
  kind: 'status-update',
  taskId,
  contextId,
  status: { state, timestamp: new Date().toISOString() },
  final,
});

class EchoExecutor {
  async execute(ctx, bus) {
    const { taskId, contextId, userMessage } = ctx;
    const text = textOf(userMessage);
    if (text.startsWith('message')) {
      bus.publish({
        kind: 'message',
        messageId: randomUUID(),
        role: 'agent',
        parts: [{ kind: 'text', text }],
        contextId,
      });
      bus.finished();
      return;
    }
    if (!ctx.task) {
      bus.publish({
        kind: 'task',
        id: taskId,
        contextId,
        status: { state: 'submitted', timestamp: new Date().toISOString() },
        history: [userMessage],
      });
    }
    bus.publish(status(taskId, contextId, 'working', false));
    if (text.startsWith('hold')) {
      // Left open: cancelTask publishes the final event.
      return;
    }
    bus.publish({
      kind: 'artifact-update',
      taskId,
      contextId,
      artifact: { artifactId: 'echo', parts: [{ kind: 'text', text }] },
    });
    bus.publish(status(taskId, contextId, 'completed', true));
    bus.finished();
  }

  async cancelTask(taskId, bus) {
    const task = await store.load(taskId);
    bus.publish(status(taskId, task ? task.contextId : randomUUID(), 'canceled', true));
    bus.finished();
  }
}

const store = new InMemoryTaskStore();
const app = express();
const server = app.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const base = `http://127.0.0.1:${port}`;
  const card = buildCard(base);
  const extended = { ...card, name: `${card.name} (extended)` };
  if (flag('--secret-skill')) {
    extended.skills = [
      ...card.skills,
      {
        id: 'secret',
        name: 'Secret',
        description: 'only on the extended card',
        tags: ['extended'],
        inputModes: ['text/plain'],
        outputModes: ['text/plain'],
      },
    ];
  }
  const handler = new DefaultRequestHandler(
    card,
    store,
    new EchoExecutor(),
    undefined,
    undefined,
    undefined,
    async () => extended,
  );
  const userBuilder = UserBuilder.noAuthentication;
  app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
  app.use('/jsonrpc', jsonRpcHandler({ requestHandler: handler, userBuilder }));
  app.use('/rest', restHandler({ requestHandler: handler, userBuilder }));
  console.log(
    JSON.stringify({
      event: 'listening',
      addr: `127.0.0.1:${port}`,
      card_url: `${base}/.well-known/agent-card.json`,
    }),
  );
});
