"""General-purpose driver around the OFFICIAL Python a2a-sdk 1.3.0 client, for integration tests.

Used by tests/agent_*.rs (and the data-plane tests) to talk to an A2A server the way a real
orchestrator would: the SDK fetches BASE/.well-known/agent-card.json itself (sending
A2A-Version: 1.0), picks the interface for --binding from the card, copies its tenant, and sends
every RPC to the card's interface URL.

Usage:
  python sdk_client.py --url BASE [options]

Options:
  --url BASE              base URL of the agent (or of the gateway's /agents/{name}); required
  --op OP                 card | send | stream | get-task | list-tasks | cancel | subscribe |
                          extended-card | push-config        (default: send)
                          send/stream both call Client.send_message; `stream` forces --stream.
  --binding B             JSONRPC (default) | HTTP+JSON: the only binding the client may use
  --stream / --no-stream  ClientConfig.streaming (default --no-stream). With streaming on and a card
                          that says streaming:true the SDK uses SendStreamingMessage.
  --text T                text part (repeatable; default "echo hello")
  --data JSON             a data part (JSON value; mediaType application/json), repeatable
  --task-id ID            taskId of the message (continue a task) / id for get-task, cancel, subscribe
  --context-id ID         contextId of the message
  --skill-hint ID         puts {"skillId": ID} in the request metadata
  --accepted-output-modes M1,M2
  --return-immediately    configuration.returnImmediately
  --history-length N      configuration.historyLength / GetTask historyLength
  --token TOKEN           sends "Authorization: Bearer TOKEN" on every request (card fetch included)
  --extensions U1,U2      activates these extensions (A2A-Extensions request header, via the SDK's
                          ServiceParameters)
  --tenant-expect T       asserts that the chosen interface's tenant is T and that every returned
                          task's metadata.tenant is T (prints a tenant_check line; exit 3 if not)
  --timeout S             overall timeout in seconds (default 30)

Output: one JSON object per line on stdout, in order:
  {"kind":"card","card":{...}}                        the public card the SDK resolved (ProtoJSON)
  {"kind":"interface","url":...,"binding":...,"tenant":...}   the interface the driver expects used
  {"kind":"event","event":{...}}                      each StreamResponse from send/stream/subscribe
  {"kind":"task","task":{...}}                        get-task / cancel result
  {"kind":"list","response":{...}}                    list-tasks result
  {"kind":"extended_card","card":{...}}               extended-card result
  {"kind":"response_headers","url":...,"status":N,"a2a_extensions":"..."}  for every HTTP response
                                                      that carried an A2A-Extensions header
  {"kind":"tenant_check","ok":bool,...}               with --tenant-expect
  {"kind":"error","type":"UnsupportedOperationError","code":-32004,"reason":"UNSUPPORTED_OPERATION",
   "http_status":null,"message":"...","data":{...}}   an error raised by the SDK (last line)
  ProtoJSON uses the wire's camelCase names and enum names (TASK_STATE_COMPLETED).
Exit status: 0 success, 2 an error line was printed, 3 the tenant check failed, 4 bad usage.
"""

import argparse
import asyncio
import json
import sys
import uuid

import httpx
from google.protobuf import json_format, struct_pb2

from a2a.client import A2ACardResolver, ClientCallContext, ClientConfig, ClientFactory
from a2a.client.service_parameters import ServiceParametersFactory, with_a2a_extensions
from a2a.types import (
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)
from a2a.utils.errors import A2A_ERROR_MAPPING, JSON_RPC_ERROR_CODE_MAP, A2AError


def emit(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def to_json(msg):
    return json_format.MessageToDict(msg, preserving_proto_field_name=False)


def error_line(e):
    """Describes any exception the SDK raised, with the protocol code and reason when it has one."""
    cls = type(e)
    code = JSON_RPC_ERROR_CODE_MAP.get(cls)
    mapping = A2A_ERROR_MAPPING.get(cls)
    http_status = None
    cause = e
    while cause is not None:
        if isinstance(cause, httpx.HTTPStatusError):
            http_status = cause.response.status_code
            break
        cause = cause.__cause__ or cause.__context__
    return {
        "kind": "error",
        "type": cls.__name__,
        "code": code,
        "reason": mapping.reason if mapping else None,
        "http_status": http_status,
        "message": getattr(e, "message", None) or str(e),
        "data": getattr(e, "data", None) if isinstance(e, A2AError) else None,
    }


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", required=True)
    p.add_argument("--op", default="send", choices=[
        "card", "send", "stream", "get-task", "list-tasks", "cancel", "subscribe",
        "extended-card", "push-config"])
    p.add_argument("--binding", default="JSONRPC", choices=["JSONRPC", "HTTP+JSON"])
    p.add_argument("--stream", dest="stream", action="store_true", default=False)
    p.add_argument("--no-stream", dest="stream", action="store_false")
    p.add_argument("--text", action="append")
    p.add_argument("--data", action="append", default=[])
    p.add_argument("--task-id")
    p.add_argument("--context-id")
    p.add_argument("--skill-hint")
    p.add_argument("--accepted-output-modes")
    p.add_argument("--return-immediately", action="store_true")
    p.add_argument("--history-length", type=int)
    p.add_argument("--token")
    p.add_argument("--extensions")
    p.add_argument("--tenant-expect")
    p.add_argument("--timeout", type=float, default=30.0)
    args = p.parse_args(argv)
    if args.op == "stream":
        args.stream = True
    if args.op in ("get-task", "cancel", "subscribe") and not args.task_id:
        p.error(f"--op {args.op} needs --task-id")
    if args.text is None and not args.data:
        args.text = ["echo hello"]
    return args


class Tenants:
    """Collects the tenant seen in task metadata, for --tenant-expect."""

    def __init__(self):
        self.seen = []

    def note(self, task_json):
        md = task_json.get("metadata") or {}
        self.seen.append(md.get("tenant"))


async def run(args):
    headers = {}
    if args.token:
        headers["Authorization"] = f"Bearer {args.token}"

    async def on_response(response):
        ext = response.headers.get("a2a-extensions")
        if ext is not None:
            emit({"kind": "response_headers", "url": str(response.request.url),
                  "status": response.status_code, "a2a_extensions": ext})

    http = httpx.AsyncClient(headers=headers, timeout=args.timeout,
                             event_hooks={"response": [on_response]})
    config = ClientConfig(streaming=args.stream, httpx_client=http,
                          supported_protocol_bindings=[args.binding])
    if args.accepted_output_modes:
        config.accepted_output_modes = args.accepted_output_modes.split(",")
    context = None
    if args.extensions:
        uris = [u.strip() for u in args.extensions.split(",") if u.strip()]
        context = ClientCallContext(
            service_parameters=ServiceParametersFactory.create([with_a2a_extensions(uris)]))

    tenants = Tenants()
    status = 0
    iface = None
    try:
        # What ClientFactory.create_from_url does, in two steps so the resolved card can be printed.
        card = await A2ACardResolver(http, args.url).get_agent_card()
        client = ClientFactory(config).create(card)
        emit({"kind": "card", "card": to_json(card)})
        iface = next((i for i in card.supported_interfaces if i.protocol_binding == args.binding), None)
        if iface is not None:
            emit({"kind": "interface", "url": iface.url, "binding": iface.protocol_binding,
                  "tenant": iface.tenant or None})
        if args.op == "card":
            return 0

        if args.op in ("send", "stream"):
            parts = [Part(text=t) for t in (args.text or [])]
            for d in args.data:
                v = struct_pb2.Value()
                json_format.Parse(d, v)
                parts.append(Part(data=v, media_type="application/json"))
            msg = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=parts)
            if args.task_id:
                msg.task_id = args.task_id
            if args.context_id:
                msg.context_id = args.context_id
            req = SendMessageRequest(message=msg)
            if args.skill_hint:
                req.metadata.update({"skillId": args.skill_hint})
            if args.return_immediately:
                req.configuration.return_immediately = True
            if args.history_length is not None:
                req.configuration.history_length = args.history_length
            async for ev in client.send_message(req, context=context):
                j = to_json(ev)
                if "task" in j:
                    tenants.note(j["task"])
                emit({"kind": "event", "event": j})
        elif args.op == "subscribe":
            async for ev in client.subscribe(SubscribeToTaskRequest(id=args.task_id), context=context):
                emit({"kind": "event", "event": to_json(ev)})
        elif args.op == "get-task":
            req = GetTaskRequest(id=args.task_id)
            if args.history_length is not None:
                req.history_length = args.history_length
            t = to_json(await client.get_task(req, context=context))
            tenants.note(t)
            emit({"kind": "task", "task": t})
        elif args.op == "cancel":
            t = to_json(await client.cancel_task(CancelTaskRequest(id=args.task_id), context=context))
            tenants.note(t)
            emit({"kind": "task", "task": t})
        elif args.op == "list-tasks":
            r = to_json(await client.list_tasks(ListTasksRequest(), context=context))
            emit({"kind": "list", "response": r})
        elif args.op == "extended-card":
            c = await client.get_extended_agent_card(GetExtendedAgentCardRequest(), context=context)
            emit({"kind": "extended_card", "card": to_json(c)})
        elif args.op == "push-config":
            cfg = TaskPushNotificationConfig(task_id=args.task_id or "t", url="https://hook.invalid/a2a")
            r = await client.create_task_push_notification_config(cfg, context=context)
            emit({"kind": "push_config", "config": to_json(r)})
        await client.close()
    except Exception as e:  # every failure becomes one machine-readable line
        emit(error_line(e))
        status = 2
    finally:
        await http.aclose()

    if args.tenant_expect is not None:
        iface_tenant = (iface.tenant or None) if iface is not None else None
        ok = iface_tenant == args.tenant_expect and bool(tenants.seen) and all(
            t == args.tenant_expect for t in tenants.seen)
        emit({"kind": "tenant_check", "ok": ok, "expected": args.tenant_expect,
              "interface_tenant": iface_tenant, "task_tenants": tenants.seen})
        if not ok and status == 0:
            status = 3
    return status


def main(argv=None):
    args = parse_args(argv if argv is not None else sys.argv[1:])
    try:
        return asyncio.run(asyncio.wait_for(run(args), timeout=args.timeout + 5))
    except asyncio.TimeoutError:
        emit({"kind": "error", "type": "Timeout", "code": None, "reason": None,
              "http_status": None, "message": f"no answer within {args.timeout} s", "data": None})
        return 2


if __name__ == "__main__":
    sys.exit(main())
