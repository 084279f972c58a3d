"""A small A2A 0.3 test agent built only from the official Python `a2a-sdk` 0.3.26.

Used by the Rust integration tests (tests/integration/common/sdk_agent.rs, `SdkAgent::start_v03`)
as a real 0.3 peer: it binds 127.0.0.1:0 itself and prints ONE JSON line on stdout before serving:

    {"event":"listening","addr":"127.0.0.1:PORT","card_url":"http://127.0.0.1:PORT/.well-known/agent-card.json"}

The card is the SDK's own 0.3 `AgentCard` (top-level `url`, `preferredTransport`,
`additionalInterfaces`, `protocolVersion` "0.3.0"), served by the SDK's app on its well-known
route. `--transport` picks the main interface: `jsonrpc` serves JSON-RPC at `/jsonrpc` (the SDK's
Starlette app), `rest` serves HTTP+JSON at `/rest` (the SDK's FastAPI app), `grpc` serves the 0.3
gRPC service `a2a.v1.A2AService` (the SDK's `GrpcHandler`, plaintext, on a second port the card
names as `http://127.0.0.1:PORT`); the other HTTP binding is listed in `additionalInterfaces` only
when `--both` is given (and then also served).

What the agent does with a message, by its text:
- `task …`: a Task (submitted), a `working` status update, one artifact echoing the text, then
  `completed` (the last status update carries 0.3's `final: true`);
- `hold …`: a Task that stays `working` (a status update every 200 ms) until it is canceled (or
  30 s pass), for get/cancel/resubscribe;
- anything else: one agent Message echoing the text.

Flags for the 0.3 features the gateway translates:
- `--no-streaming`: the card says `capabilities.streaming: false` (the SDK then refuses
  `message/stream` with -32603 "Streaming is not supported by the agent");
- `--refuse-streams`: the card served says `streaming: true`, but the SDK's handler holds a card
  that says false, so it refuses `message/stream` as it does for an agent that does not stream:
  -32603 "Streaming is not supported by the agent" (the card claims what the server refuses);
- `--push`: `capabilities.pushNotifications: true`, with the SDK's in-memory push config store;
- `--extended`: `supportsAuthenticatedExtendedCard: true`, serving an extended card with one more
  skill (`secret`, requiring the `bearer` scheme) and two security schemes on
  `agent/getAuthenticatedExtendedCard`, `GET /v1/card`, and (with `--transport grpc`) the gRPC
  service's `GetAgentCard`.
"""

import argparse
import asyncio
import json
import os
import socket
import sys
import threading

import uvicorn
from starlette.applications import Starlette
from starlette.routing import Mount

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.apps import A2ARESTFastAPIApplication, A2AStarletteApplication
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryPushNotificationConfigStore, InMemoryTaskStore, TaskUpdater
from a2a.types import (AgentCapabilities, AgentCard, AgentInterface, AgentSkill, APIKeySecurityScheme,
                       HTTPAuthSecurityScheme, In, Part, SecurityScheme, TextPart)
from a2a.utils import new_agent_text_message, new_task

JSONRPC_PATH = '/jsonrpc'
REST_PATH = '/rest'


class EchoExecutor(AgentExecutor):
    """Echoes messages; `task …` and `hold …` run a task (see the module doc)."""

    def __init__(self):
        self.held = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        if not text.startswith(('task', 'hold')):
            await event_queue.enqueue_event(new_agent_text_message(text))
            return
        task = context.current_task or new_task(context.message)
        await event_queue.enqueue_event(task)
        up = TaskUpdater(event_queue, task.id, task.context_id)
        await up.start_work()
        if text.startswith('hold'):
            # A `working` status update every 200 ms until canceled: a resubscribed stream sees
            # one soon after it attached, so a test knows it is attached before it cancels.
            # The SDK's cancel publishes on a queue of its own (a tap), which other taps (a
            # resubscribed stream) never see: the canceled status is published here too, on the
            # task's main queue, so subscribers get it (with 0.3's `final: true`).
            released = self.held.setdefault(task.id, asyncio.Event())
            for _ in range(150):
                try:
                    await asyncio.wait_for(released.wait(), 0.2)
                    await up.cancel()
                    return
                except asyncio.TimeoutError:
                    pass
                if not released.is_set():
                    await up.start_work()
            return
        await up.add_artifact([Part(root=TextPart(text=text))], name='echo')
        await up.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        up = TaskUpdater(event_queue, context.task_id, context.context_id)
        await up.cancel()
        released = self.held.get(context.task_id)
        if released is not None:
            released.set()


def build_card(base, transport, both, streaming=True, push=False, extended=False, skills=None,
               grpc_url=None):
    urls = {'JSONRPC': base + JSONRPC_PATH, 'HTTP+JSON': base + REST_PATH}
    if grpc_url:
        urls['GRPC'] = grpc_url
    main = {'jsonrpc': 'JSONRPC', 'rest': 'HTTP+JSON', 'grpc': 'GRPC'}[transport]
    others = [t for t in urls if t != main and t != 'GRPC'] if both else []
    return AgentCard(
        name='SDK 0.3 echo',
        description='Echo agent built from the official a2a-sdk 0.3.26',
        url=urls[main],
        preferred_transport=main,
        additional_interfaces=[AgentInterface(url=urls[t], transport=t) for t in [main] + others],
        protocol_version='0.3.0',
        version='0.3.26',
        capabilities=AgentCapabilities(streaming=streaming, push_notifications=push),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=[AgentSkill(id='echo', name='Echo', description='echoes the text it is sent',
                           tags=['demo'], input_modes=['text/plain'], output_modes=['text/plain'])]
        + (skills or []),
        supports_authenticated_extended_card=extended,
    )


def main(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--transport', choices=['jsonrpc', 'rest', 'grpc'], default='jsonrpc')
    p.add_argument('--both', action='store_true', help='list and serve the other binding too')
    p.add_argument('--no-streaming', action='store_true', help='capabilities.streaming false')
    p.add_argument('--refuse-streams', action='store_true',
                   help='serve streaming:true, refuse message/stream as a non-streaming agent does')
    p.add_argument('--push', action='store_true', help='push notifications, in-memory store')
    p.add_argument('--extended', action='store_true', help='an authenticated extended card')
    p.add_argument('--exit-on-stdin-eof', action='store_true')
    args = p.parse_args(argv)
    if args.exit_on_stdin_eof:
        threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    # Listen before announcing: connections made right after the line queue in the backlog.
    sock.listen(128)
    port = sock.getsockname()[1]
    base = f'http://127.0.0.1:{port}'
    streams = not (args.no_streaming or args.refuse_streams)
    grpc_server, grpc_url = None, None
    # One loop for both servers, set before the gRPC server is made (grpc.aio binds to it).
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    if args.transport == 'grpc':
        import grpc
        from a2a.grpc import a2a_pb2_grpc
        from a2a.server.request_handlers import GrpcHandler
        grpc_server = grpc.aio.server()
        grpc_port = grpc_server.add_insecure_port('127.0.0.1:0')
        grpc_url = f'http://127.0.0.1:{grpc_port}'
    flags = dict(streaming=streams, push=args.push, extended=args.extended, grpc_url=grpc_url)
    card = build_card(base, args.transport, args.both, **flags)
    extended = None
    if args.extended:
        secret = AgentSkill(id='secret', name='Secret', description='only on the extended card',
                            tags=['extended'], input_modes=['text/plain'], output_modes=['text/plain'],
                            security=[{'bearer': []}])
        extended = build_card(base, args.transport, args.both, skills=[secret], **flags)
        # Security schemes of two kinds, which the gRPC service's proto holds as oneofs.
        extended.security_schemes = {
            'bearer': SecurityScheme(root=HTTPAuthSecurityScheme(scheme='bearer', bearer_format='opaque')),
            'key': SecurityScheme(root=APIKeySecurityScheme(name='X-Key', in_=In.header)),
        }
    handler = DefaultRequestHandler(
        agent_executor=EchoExecutor(), task_store=InMemoryTaskStore(),
        push_config_store=InMemoryPushNotificationConfigStore() if args.push else None)
    claim = None
    if args.refuse_streams:
        claim = lambda c: c.model_copy(  # noqa: E731
            update={'capabilities': c.capabilities.model_copy(update={'streaming': True})})
    jsonrpc = A2AStarletteApplication(agent_card=card, http_handler=handler,
                                      extended_agent_card=extended, card_modifier=claim)
    routes = []
    # The SDK's apps serve the card on the well-known route; the JSON-RPC app's is the one mounted.
    jsonrpc_routes = jsonrpc.routes(rpc_url=JSONRPC_PATH)
    routes += jsonrpc_routes
    if args.transport == 'rest' or args.both:
        rest = A2ARESTFastAPIApplication(agent_card=card, http_handler=handler,
                                         extended_agent_card=extended, card_modifier=claim).build()
        routes.append(Mount(REST_PATH, app=rest))
    app = Starlette(routes=routes)
    config = uvicorn.Config(app, log_level='warning', lifespan='off')

    async def serve():
        if grpc_server is not None:
            # The 0.3 service has one card rpc (GetAgentCard), which the 0.3 client calls for the
            # extended card: the SDK's handler answers it with the card it is given.
            served = GrpcHandler(extended or card, handler)
            a2a_pb2_grpc.add_A2AServiceServicer_to_server(served, grpc_server)
            await grpc_server.start()
        print(json.dumps({'event': 'listening', 'addr': f'127.0.0.1:{port}',
                          'card_url': f'{base}/.well-known/agent-card.json'}), flush=True)
        await uvicorn.Server(config).serve(sockets=[sock])

    loop.run_until_complete(serve())


if __name__ == '__main__':
    main(sys.argv[1:])
