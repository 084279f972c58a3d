// Driver around the OFFICIAL JS @a2a-js/sdk 1.3.0 client, for integration tests: the second
// 1.0 client (beside tests/peers/sdk_client.py) that talks to an A2A server the way an
// orchestrator would. The SDK's ClientFactory fetches BASE/.well-known/agent-card.json itself,
// picks the interface for --binding from the card and sends every call to its URL.
//
// Usage:
//   node sdk_client.mjs --url BASE [options]
//
// Options (a subset of sdk_client.py's, with the same meaning):
//   --url BASE              base URL of the agent (or of the gateway's /agents/{name}); required
//   --op OP                 send | stream | get-task | cancel | subscribe | list-tasks |
//                           push-config | extended-card   (default: send)
//   --binding B             JSONRPC (default) | HTTP+JSON: the transport the client prefers
//   --text T                text part (repeatable; default "echo hello")
//   --task-id ID            id for get-task, cancel, subscribe, push-config
//   --return-immediately    configuration.returnImmediately (the client polls: ClientConfig.polling)
//   --cancel-after N        subscribe: cancel the task (CancelTask, same client) after the stream's
//                           N-th event, and read the stream on to its end
//   --timeout S             overall timeout in seconds (default 30)
//
// Output: one JSON object per line on stdout, as sdk_client.py prints them (ProtoJSON through
// the SDK's own `toJSON`):
//   {"kind":"event","event":{...}}    each StreamResponse of stream/subscribe; a send's result as
//                                     {"task":…} or {"message":…}
//   {"kind":"task","task":{...}}      get-task / cancel result
//   {"kind":"list","response":{...}}  list-tasks result
//   {"kind":"push_config","config":{...}}
//   {"kind":"extended_card","card":{...}}
//   {"kind":"error","type":"TaskNotFoundError","code":-32001,"reason":"TASK_NOT_FOUND",
//    "http_status":null,"message":"..."}   an error the SDK raised (last line)
// Exit status: 0 success, 2 an error line was printed, 4 bad usage.

import { randomUUID } from "node:crypto";
import {
  ClientFactory,
  ClientFactoryOptions,
} from "@a2a-js/sdk/client";
import {
  AgentCard,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
} from "@a2a-js/sdk";

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

function usage(why) {
  process.stderr.write(`sdk_client.mjs: ${why}\n`);
  process.exit(4);
}

function parseArgs(argv) {
  const a = { op: "send", binding: "JSONRPC", text: [], timeout: 30 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) usage(`${flag} needs a value`);
      return argv[++i];
    };
    switch (flag) {
      case "--url": a.url = value(); break;
      case "--op": a.op = value(); break;
      case "--binding": a.binding = value(); break;
      case "--text": a.text.push(value()); break;
      case "--task-id": a.taskId = value(); break;
      case "--return-immediately": a.returnImmediately = true; break;
      case "--cancel-after": a.cancelAfter = Number(value()); break;
      case "--timeout": a.timeout = Number(value()); break;
      default: usage(`unknown option ${flag}`);
    }
  }
  if (!a.url) usage("--url is required");
  const ops = ["send", "stream", "get-task", "cancel", "subscribe", "list-tasks",
    "push-config", "extended-card"];
  if (!ops.includes(a.op)) usage(`unknown --op ${a.op}`);
  if (["get-task", "cancel", "subscribe"].includes(a.op) && !a.taskId) {
    usage(`--op ${a.op} needs --task-id`);
  }
  if (!["JSONRPC", "HTTP+JSON"].includes(a.binding)) usage(`unknown --binding ${a.binding}`);
  if (a.text.length === 0) a.text = ["echo hello"];
  return a;
}

/** One machine-readable line for anything the SDK threw, with the protocol's code and reason. */
function errorLine(e) {
  return {
    kind: "error",
    type: e?.name ?? typeof e,
    // A JSON-RPC error's envelope code, as the SDK kept it (`JsonRpc*Error.envelopeCode`).
    code: [e?.envelopeCode, e?.code].find((c) => typeof c === "number") ?? null,
    transport: e?.transport ?? null,
    reason: e?.reason ?? null,
    http_status: typeof e?.statusCode === "number" ? e.statusCode : null,
    message: e?.message ?? String(e),
  };
}

/** A send's result as the StreamResponse member it would be in a stream. */
function sendResult(r) {
  return "artifacts" in r || "status" in r
    ? { task: Task.toJSON(r) }
    : { message: Message.toJSON(r) };
}

async function run(a) {
  const signal = AbortSignal.timeout(a.timeout * 1000);
  const options = { signal };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      preferredTransports: [a.binding],
      clientConfig: { polling: Boolean(a.returnImmediately) },
    }),
  );
  // The card's full URL: a base with a path (`…/agents/{name}`) would lose its last segment
  // when the SDK resolves its default card path against it.
  const card = `${a.url.replace(/\/+$/, "")}/.well-known/agent-card.json`;
  const client = await factory.createFromUrl(card, "");
  const send = () => {
    const req = {
      message: {
        messageId: randomUUID(),
        role: "ROLE_USER",
        parts: a.text.map((t) => ({ text: t })),
      },
    };
    if (a.returnImmediately) req.configuration = { returnImmediately: true };
    return SendMessageRequest.fromJSON(req);
  };
  switch (a.op) {
    case "send":
      emit({ kind: "event", event: sendResult(await client.sendMessage(send(), options)) });
      break;
    case "stream":
      for await (const ev of client.sendMessageStream(send(), options)) {
        emit({ kind: "event", event: StreamResponse.toJSON(ev) });
      }
      break;
    case "subscribe": {
      let seen = 0;
      for await (const ev of client.resubscribeTask({ id: a.taskId, tenant: "" }, options)) {
        emit({ kind: "event", event: StreamResponse.toJSON(ev) });
        seen += 1;
        if (seen === a.cancelAfter) {
          const t = await client.cancelTask({ id: a.taskId, tenant: "" }, options);
          emit({ kind: "task", task: Task.toJSON(t) });
        }
      }
      break;
    }
    case "get-task":
      emit({ kind: "task", task: Task.toJSON(await client.getTask({ id: a.taskId, tenant: "" }, options)) });
      break;
    case "cancel":
      emit({ kind: "task", task: Task.toJSON(await client.cancelTask({ id: a.taskId, tenant: "" }, options)) });
      break;
    case "list-tasks": {
      const r = await client.listTasks({ tenant: "" }, options);
      emit({ kind: "list", response: ListTasksResponse.toJSON(r) });
      break;
    }
    case "push-config": {
      const cfg = TaskPushNotificationConfig.fromJSON({
        taskId: a.taskId ?? "t",
        url: "https://hook.invalid/a2a",
      });
      const r = await client.createTaskPushNotificationConfig(cfg, options);
      emit({ kind: "push_config", config: TaskPushNotificationConfig.toJSON(r) });
      break;
    }
    case "extended-card": {
      const c = await client.getAgentCard(options);
      emit({ kind: "extended_card", card: AgentCard.toJSON(c) });
      break;
    }
  }
}

const args = parseArgs(process.argv.slice(2));
try {
  await run(args);
  process.exit(0);
} catch (e) {
  emit(errorLine(e));
  process.exit(2);
}
