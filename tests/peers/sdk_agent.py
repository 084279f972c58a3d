"""A configurable A2A 1.0 test agent built only from the official Python `a2a-sdk` 1.3.0.

Used by the Rust integration tests (tests/common) as a real peer: it binds 127.0.0.1:0 itself and
prints ONE JSON line on stdout before serving:

    {"event":"listening","addr":"127.0.0.1:PORT","card_url":"http://127.0.0.1:PORT/.well-known/agent-card.json"}

Layout (fixed, so tests can predict it):
    GET  /.well-known/agent-card.json    public card (SDK route: weak ETag, 304)
    POST /jsonrpc                        JSON-RPC interface (SDK dispatcher)
    *    /rest/...  and /rest/{tenant}/... HTTP+JSON interface (SDK routes inside a Starlette Mount; the
                                         SDK's `path_prefix` mis-mounts the tenant variant, see PYTHON-SDK.md)
    GET  /_test/seen, POST /_test/reset  TEST-ONLY introspection: every request received, as JSON
                                         (gRPC calls too, with `grpc_method`)
    GET  /_test/ended                    TEST-ONLY: the streaming gRPC calls that have ended (handler names)
    POST /_test/require-extension {"uri": U}  TEST-ONLY: start requiring extension U (card and -32008)
                                         (never part of A2A; exists so tests assert what the agent saw)

What the SDK does not do by itself is added here, because the gateway's tests need a strict peer:
required-extension enforcement (-32008), echo of activated extensions in `A2A-Extensions`, tenant
checks, bearer-token checks, an exact-version gate and a "streaming advertised but refused" mode.
All protocol errors are the SDK's own error types, rendered by the SDK's dispatchers.
"""

import argparse
import asyncio
import json
import math
import os
import socket
import sys
import threading

import grpc
import uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Mount, Route

from a2a.helpers import get_data_parts, get_message_text, new_data_part, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.request_handlers.grpc_handler import DefaultGrpcServerCallContextBuilder
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2_grpc
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentExtension,
    AgentInterface,
    AgentProvider,
    AgentSkill,
    HTTPAuthSecurityScheme,
    SecurityRequirement,
    SecurityScheme,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import (
    ExtensionSupportRequiredError,
    InvalidParamsError,
    UnsupportedOperationError,
    VersionNotSupportedError,
)

JSONRPC_PATH = '/jsonrpc'
REST_PATH = '/rest'
# First path segments of the HTTP+JSON routes; any other first segment under /rest is a tenant.
REST_ROOTS = ('message:send', 'message:stream', 'tasks', 'extendedAgentCard')


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument('--binding', choices=['jsonrpc', 'rest', 'both', 'rest-first', 'grpc'], default='jsonrpc',
                   help='interfaces in the card, in preference order (both = JSONRPC then HTTP+JSON)')
    p.add_argument('--streaming', choices=['on', 'off'], default='on')
    p.add_argument('--refuse-streaming', action='store_true',
                   help='card says streaming:true, SendStreamingMessage answers UnsupportedOperationError')
    p.add_argument('--required-extension', action='append', default=[], metavar='URI')
    p.add_argument('--optional-extension', action='append', default=[], metavar='URI')
    p.add_argument('--tenant', default='', help='interface tenant; requests with another tenant are rejected')
    p.add_argument('--token', default='', help='require "Authorization: Bearer TOKEN" (else HTTP 401)')
    p.add_argument('--extended-card', action='store_true',
                   help='capabilities.extendedAgentCard + an extended card with an extra skill')
    p.add_argument('--card-version', default='1.0.0')
    p.add_argument('--name', default='SDK test agent')
    p.add_argument('--description', default='A2A 1.0 test agent built from the official a2a-sdk',
                   help="the card's description (e.g. only invisible characters)")
    p.add_argument('--tag', action='append', default=[], metavar='TAG',
                   help="every skill's tags (repeatable; default test)")
    p.add_argument('--skill', action='append', default=[], metavar='ID:MODE,MODE',
                   help='skill id and its input modes (repeatable; default echo:text/plain)')
    p.add_argument('--version-only', default='', metavar='X',
                   help='reject any A2A-Version other than exactly X with VersionNotSupportedError')
    p.add_argument('--slow-stream', type=int, default=1, metavar='N',
                   help='emit N artifact updates per task, 50 ms apart')
    p.add_argument('--sign-key', default='', metavar='PEM',
                   help='sign the public card with this private key (a2a.utils.signing)')
    p.add_argument('--sign-kid', default='test-key')
    p.add_argument('--sign-alg', default='ES256')
    p.add_argument('--tls-cert', default='', metavar='PEM',
                   help='serve HTTPS with this certificate chain (with --tls-key); URLs become https://')
    p.add_argument('--tls-key', default='', metavar='PEM')
    p.add_argument('--delay-ms', type=int, default=0,
                   help='wait this long before handling each A2A request (not the card or /_test)')
    p.add_argument('--gzip', action='store_true',
                   help="compress answers (Starlette's GZipMiddleware, any size) when the request's "
                        'Accept-Encoding asks for gzip')
    p.add_argument('--interface-base', default='', metavar='URL',
                   help='put interfaces under this base URL in the card instead of this server '
                        '(e.g. another server that presents a bad certificate)')
    p.add_argument('--drive-modes', action='store_true',
                   help="`message …`, `hold …` and task texts as the 0.3 peers answer them (DriveExecutor)")
    p.add_argument('--grpc-hang', action='store_true',
                   help='record each gRPC call, then never answer it (a deadline test)')
    p.add_argument('--grpc-url', choices=['http', 'bare'], default='http',
                   help="how the card writes the gRPC interface's URL: http://127.0.0.1:PORT or "
                        '127.0.0.1:PORT (the SDK samples\' form, which means TLS)')
    p.add_argument('--exit-on-stdin-eof', action='store_true',
                   help='exit when stdin closes (the test harness holds it open, so an aborted test run '
                        'leaves no orphan agent)')
    return p.parse_args(argv)


def build_cards(args, base, grpc_base=''):
    interfaces = {
        'grpc': AgentInterface(url=grpc_base, protocol_binding='GRPC', protocol_version='1.0',
                               tenant=args.tenant),
        'jsonrpc': AgentInterface(url=base + JSONRPC_PATH, protocol_binding='JSONRPC',
                                  protocol_version='1.0', tenant=args.tenant),
        'rest': AgentInterface(url=base + REST_PATH, protocol_binding='HTTP+JSON',
                               protocol_version='1.0', tenant=args.tenant),
    }
    order = {'jsonrpc': ['jsonrpc'], 'rest': ['rest'], 'both': ['jsonrpc', 'rest'],
             'rest-first': ['rest', 'jsonrpc'], 'grpc': ['grpc']}[args.binding]
    extensions = [AgentExtension(uri=u, required=True, description='required test extension')
                  for u in args.required_extension]
    extensions += [AgentExtension(uri=u, required=False, description='optional test extension')
                   for u in args.optional_extension]
    skills = []
    for spec in args.skill or ['echo:text/plain']:
        sid, _, modes = spec.partition(':')
        skills.append(AgentSkill(id=sid, name=sid, description=f'{sid} skill of the SDK test agent',
                                 tags=args.tag or ['test'], input_modes=[m for m in modes.split(',') if m]))
    card = AgentCard(
        name=args.name,
        description=args.description,
        version=args.card_version,
        provider=AgentProvider(organization='a2a-egress tests', url='https://example.com'),
        supported_interfaces=[interfaces[k] for k in order],
        capabilities=AgentCapabilities(streaming=args.streaming == 'on', push_notifications=False,
                                       extensions=extensions,
                                       extended_agent_card=args.extended_card),
        default_input_modes=['text/plain'],
        default_output_modes=['text/plain'],
        skills=skills,
    )
    if args.token:
        card.security_schemes['bearer'].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme='Bearer')))
        card.security_requirements.append(SecurityRequirement(schemes={'bearer': StringList(list=[])}))
    extended = None
    if args.extended_card:
        extended = AgentCard()
        extended.CopyFrom(card)
        extended.skills.append(AgentSkill(id='extended-echo', name='extended-echo', tags=['test'],
                                          description='only in the extended card'))
    if args.sign_key:
        from a2a.utils.signing import create_agent_card_signer

        with open(args.sign_key, 'rb') as f:
            key = f.read()
        signer = create_agent_card_signer(
            signing_key=key, protected_header={'alg': args.sign_alg, 'kid': args.sign_kid, 'typ': 'JOSE'})
        card = signer(card)
    return card, extended


def _data_artifacts(message, text):
    """The data parts to answer with: each data part of the message echoed, or for the text
    `data-pad:N` one `{"pad": "x"*N}` (a large artifact generated here, not sent)."""
    if text.startswith('data-pad:'):
        return [{'pad': 'x' * int(text[len('data-pad:'):])}]
    return get_data_parts(message.parts) if message else []


class EchoExecutor(AgentExecutor):
    """Deterministic: task, working, N artifact updates 'echo: <text>' (N>1: ' [i/N]'), one data
    artifact per data part of the message (see `_data_artifacts`), completed."""

    def __init__(self, chunks):
        self.chunks = max(1, chunks)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        if context.current_task is None:
            await event_queue.enqueue_event(Task(
                id=context.task_id, context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=[context.message]))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        text = get_message_text(context.message) if context.message else ''
        for i in range(self.chunks):
            suffix = f' [{i + 1}/{self.chunks}]' if self.chunks > 1 else ''
            if i:
                await asyncio.sleep(0.05)
            await updater.add_artifact([new_text_part(f'echo: {text}{suffix}')], name='echo')
        for data in _data_artifacts(context.message, text):
            await updater.add_artifact([new_data_part(data, 'application/json')], name='data')
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


class DriveExecutor(AgentExecutor):
    """`--drive-modes` (the modes the 0.3 peers have, which the tests' `drives_tasks` expects):
    `message …` is answered with a message echoing it, `hold …` is a task left working (a status
    update every 200 ms) until it is canceled, anything else a task whose one artifact is the text."""

    def __init__(self):
        self.held = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = get_message_text(context.message) if context.message else ''
        if text.startswith('message'):
            await event_queue.enqueue_event(new_text_message(text, context_id=context.context_id))
            return
        if context.current_task is None:
            await event_queue.enqueue_event(Task(
                id=context.task_id, context_id=context.context_id,
                status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED), history=[context.message]))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        if text.startswith('hold'):
            released = self.held.setdefault(context.task_id, asyncio.Event())
            for _ in range(150):
                try:
                    await asyncio.wait_for(released.wait(), 0.2)
                    return
                except asyncio.TimeoutError:
                    await updater.start_work()
            return
        await updater.add_artifact([new_text_part(text)], name='echo')
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()
        released = self.held.get(context.task_id)
        if released is not None:
            released.set()


class StrictHandler(DefaultRequestHandler):
    """The SDK's handler plus the checks the 1.3.0 SDK leaves to the application."""

    def __init__(self, args, **kw):
        super().__init__(**kw)
        self.args = args

    def gate(self, method, context):
        version = context.state.get('headers', {}).get('a2a-version', '')
        if self.args.version_only and version != self.args.version_only:
            raise VersionNotSupportedError(
                message=f'A2A-Version {version!r} not supported; this agent speaks only {self.args.version_only}')
        if context.tenant != self.args.tenant:
            raise InvalidParamsError(message=f'unknown tenant {context.tenant!r}')
        if method in ('on_message_send', 'on_message_send_stream'):
            for uri in self.args.required_extension:
                if uri not in context.requested_extensions:
                    raise ExtensionSupportRequiredError(message=f'extension {uri} is required')
        if self.args.refuse_streaming and method in ('on_message_send_stream', 'on_subscribe_to_task'):
            raise UnsupportedOperationError(message='Streaming is not supported by the agent')


def _gated(name, streaming):
    base = getattr(DefaultRequestHandler, name)
    if streaming:
        async def method(self, params, context):
            self.gate(name, context)
            rpc = context.state.get('grpc_context')
            if rpc is not None:
                # When the gRPC call ends, whoever ended it (/_test/ended).
                rpc.add_done_callback(lambda _: ENDED.append(name))
            async for event in base(self, params, context):
                yield event
    else:
        async def method(self, params, context):
            self.gate(name, context)
            return await base(self, params, context)
    method.__name__ = name
    return method


for _name in ('on_message_send', 'on_get_task', 'on_list_tasks', 'on_cancel_task',
              'on_get_extended_agent_card', 'on_create_task_push_notification_config',
              'on_get_task_push_notification_config', 'on_list_task_push_notification_configs',
              'on_delete_task_push_notification_config'):
    setattr(StrictHandler, _name, _gated(_name, streaming=False))
for _name in ('on_message_send_stream', 'on_subscribe_to_task'):
    setattr(StrictHandler, _name, _gated(_name, streaming=True))


def _header(scope, name):
    values = [v.decode('latin-1') for k, v in scope['headers'] if k.decode('latin-1').lower() == name]
    return ', '.join(values) if values else None


def _all_headers(scope):
    """Every request header, names lower-cased, repeated lines joined with ', ' (header hygiene)."""
    out = {}
    for k, v in scope['headers']:
        name = k.decode('latin-1').lower()
        value = v.decode('latin-1')
        out[name] = f'{out[name]}, {value}' if name in out else value
    return out


def _finite_or_text(text):
    value = float(text)
    return value if math.isfinite(value) else text


class RecordAndGuard:
    """ASGI middleware: records every request, enforces the bearer token, echoes activated extensions."""

    def __init__(self, app, args, declared_extensions):
        self.app, self.args, self.declared = app, args, declared_extensions
        self.seen = []

    async def __call__(self, scope, receive, send):
        if scope['type'] != 'http' or scope['path'].startswith('/_test/'):
            return await self.app(scope, receive, send)
        # Buffer the body (test requests are small) so the JSON-RPC method and tenant can be recorded.
        chunks, more = [], True
        while more:
            message = await receive()
            chunks.append(message.get('body', b''))
            more = message.get('more_body', False)
        body = b''.join(chunks)
        self.seen.append(self.record(scope, body))
        if self.args.delay_ms and scope['path'] != '/.well-known/agent-card.json':
            await asyncio.sleep(self.args.delay_ms / 1000)

        auth = _header(scope, 'authorization')
        if self.args.token and scope['path'] != '/.well-known/agent-card.json' \
                and auth != f'Bearer {self.args.token}':
            response = JSONResponse({'error': 'missing or wrong bearer token'}, status_code=401,
                                    headers={'WWW-Authenticate': 'Bearer'})
            return await response(scope, receive, send)

        requested = {e.strip() for e in (_header(scope, 'a2a-extensions') or '').split(',') if e.strip()}
        activated = sorted(requested & self.declared)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {'type': 'http.request', 'body': body, 'more_body': False}
            return await receive()

        async def send_with_extensions(message):
            if message['type'] == 'http.response.start' and activated:
                message = dict(message)
                message['headers'] = list(message.get('headers', [])) + [
                    (b'a2a-extensions', ', '.join(activated).encode())]
            await send(message)

        await self.app(scope, replay, send_with_extensions)

    def record(self, scope, body):
        path = scope['path']
        entry = {'path': path, 'http_method': scope['method'], 'rpc_method': None, 'rest_route': None,
                 'tenant': None, 'a2a_version': _header(scope, 'a2a-version'),
                 'a2a_extensions': _header(scope, 'a2a-extensions'),
                 'authorization': _header(scope, 'authorization'),
                 'content_type': _header(scope, 'content-type'), 'body': None,
                 'raw_body': body.decode('utf-8', 'replace'), 'headers': _all_headers(scope)}
        try:
            # Out-of-range numbers (1e400) are kept as their text: /_test/seen must stay valid JSON.
            entry['body'] = json.loads(body, parse_float=_finite_or_text) if body else None
        except ValueError:
            entry['body'] = body.decode('utf-8', 'replace')
        if path == JSONRPC_PATH and isinstance(entry['body'], dict):
            entry['rpc_method'] = entry['body'].get('method')
            params = entry['body'].get('params')
            if isinstance(params, dict):
                entry['tenant'] = params.get('tenant')
        elif path.startswith(REST_PATH + '/'):
            rest = path[len(REST_PATH) + 1:]
            first, _, remainder = rest.partition('/')
            if first and not first.startswith(REST_ROOTS):
                entry['tenant'], rest = first, remainder
            entry['rest_route'] = f"{scope['method']} /{rest}"
        return entry


def _grpc_server(args):
    """A grpc.aio server on 127.0.0.1:0 (TLS with the same certificate when the agent has one),
    recording every call into the same /_test/seen list as the HTTP requests."""
    server = grpc.aio.server(interceptors=[_GrpcRecorder(args.grpc_hang)])
    if args.tls_cert:
        with open(args.tls_cert, 'rb') as f:
            cert = f.read()
        with open(args.tls_key, 'rb') as f:
            key = f.read()
        port = server.add_secure_port('127.0.0.1:0', grpc.ssl_server_credentials([(key, cert)]))
    else:
        port = server.add_insecure_port('127.0.0.1:0')
    return server, port


GRPC_SEEN = []
# The streaming gRPC calls that have ended, by handler name (`on_message_send_stream`, …).
ENDED = []


class _GrpcRecorder(grpc.aio.ServerInterceptor):
    """Records each gRPC call: its rpc and its metadata (names lower-case), as /_test/seen shows;
    with `--grpc-hang`, then never serves it."""

    def __init__(self, hang):
        self.hang = hang

    async def intercept_service(self, continuation, details):
        md = {}
        for k, v in details.invocation_metadata or ():
            v = v if isinstance(v, str) else v.decode('latin-1')
            md[k.lower()] = f'{md[k.lower()]}, {v}' if k.lower() in md else v
        GRPC_SEEN.append({'path': details.method, 'http_method': 'POST', 'rpc_method': None,
                          'grpc_method': details.method.rsplit('/', 1)[-1], 'rest_route': None,
                          'tenant': None, 'a2a_version': md.get('a2a-version'),
                          'a2a_extensions': md.get('a2a-extensions'),
                          'authorization': md.get('authorization'), 'content_type': None,
                          'body': None, 'raw_body': '', 'headers': md})
        if self.hang:
            # Never answers: the call ends only when its client gives up (no clock involved).
            await asyncio.Event().wait()
        return await continuation(details)


class _HeadersContextBuilder(DefaultGrpcServerCallContextBuilder):
    """The SDK's gRPC context, plus the call's metadata as `state['headers']` (what the JSON-RPC
    and REST routes put there), so the strict checks read the version the same way."""

    def build(self, context):
        call = super().build(context)
        md = {}
        for k, v in context.invocation_metadata() or ():
            md[k.lower()] = v if isinstance(v, str) else v.decode('latin-1')
        call.state['headers'] = md
        return call


def main(argv):
    args = parse_args(argv)
    if args.exit_on_stdin_eof:
        threading.Thread(target=lambda: (sys.stdin.buffer.read(), os._exit(0)), daemon=True).start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(('127.0.0.1', 0))
    # Listen before announcing: connections made right after the line queue in the backlog.
    sock.listen(128)
    port = sock.getsockname()[1]
    scheme = 'https' if args.tls_cert else 'http'
    base = f'{scheme}://127.0.0.1:{port}'
    grpc_server, grpc_base = None, ''
    if args.binding == 'grpc':
        # grpc.aio binds a server to the event loop current when it is made: make that loop first.
        asyncio.set_event_loop(asyncio.new_event_loop())
        grpc_server, grpc_port = _grpc_server(args)
        grpc_host = f'127.0.0.1:{grpc_port}'
        grpc_base = grpc_host if args.grpc_url == 'bare' else f'{scheme}://{grpc_host}'
    card, extended = build_cards(args, args.interface_base.rstrip('/') or base, grpc_base)
    executor = DriveExecutor() if args.drive_modes else EchoExecutor(args.slow_stream)
    handler = StrictHandler(args, agent_executor=executor,
                            task_store=InMemoryTaskStore(), agent_card=card, extended_agent_card=extended)

    recorder = None

    async def seen(_request):
        return JSONResponse(recorder.seen + GRPC_SEEN)

    async def reset(_request):
        recorder.seen.clear()
        GRPC_SEEN.clear()
        return JSONResponse({'reset': True})

    async def require_extension(request):
        # TEST-ONLY: the agent starts requiring an extension while running (its card says so at
        # once, with a new ETag), as a redeployed agent would.
        uri = (await request.json())['uri']
        if uri not in args.required_extension:
            args.required_extension.append(uri)
            declared.add(uri)
            card.capabilities.extensions.add(uri=uri, required=True,
                                             description='required test extension')
        return JSONResponse({'required': args.required_extension})

    async def ended(_request):
        return JSONResponse(ENDED)

    routes = [Route('/_test/seen', seen, methods=['GET']), Route('/_test/reset', reset, methods=['POST']),
              Route('/_test/ended', ended, methods=['GET']),
              Route('/_test/require-extension', require_extension, methods=['POST'])]
    routes += create_agent_card_routes(card)
    routes += create_jsonrpc_routes(handler, JSONRPC_PATH)
    routes.append(Mount(REST_PATH, routes=create_rest_routes(handler)))
    declared = set(args.required_extension) | set(args.optional_extension)
    app = Starlette(routes=routes)
    if args.gzip:
        from starlette.middleware.gzip import GZipMiddleware

        app = GZipMiddleware(app, minimum_size=0)
    recorder = RecordAndGuard(app, args, declared)

    print(json.dumps({'event': 'listening', 'addr': f'127.0.0.1:{port}',
                      'card_url': f'{base}/.well-known/agent-card.json'}), flush=True)
    tls = {'ssl_certfile': args.tls_cert, 'ssl_keyfile': args.tls_key} if args.tls_cert else {}
    config = uvicorn.Config(recorder, log_level='warning', lifespan='off', **tls)
    if grpc_server is None:
        asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))
        return
    async def serve_both():
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(
            GrpcHandler(handler, context_builder=_HeadersContextBuilder()), grpc_server)
        await grpc_server.start()
        await uvicorn.Server(config).serve(sockets=[sock])

    asyncio.get_event_loop().run_until_complete(serve_both())


if __name__ == '__main__':
    main(sys.argv[1:])
