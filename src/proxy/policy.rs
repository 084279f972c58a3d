//! Policy and request shaping decisions: given one integration's state and the facts of a request,
//! either a [`Plan`] for forwarding it or the [`Deny`] to answer with (pure, no I/O).
//!
//! Every check runs before anything leaves the gateway. The order is fixed so the same request
//! always gets the same refusal: status → binding → blocked (a blocked integration serves only
//! its running tasks) → data class → version → method → tenant → media types → streaming →
//! content (the integration's guard, on message sends: refused, redacted or recorded, and the
//! data classes it finds checked like declared ones).

use std::sync::Arc;

use bytes::Bytes;

use super::body::{RequestFacts, RpcRequest};
use super::deny::{Deny, sanitize_echo};
use super::route::{Method, Route, media_type_accepted};
use crate::config::{IntegrationGuard, StreamingMode};
use crate::guard::{self, Action};
use crate::profile::{Binding, Profile};
use crate::state::{IntegrationState, Snapshot, Status, satisfies};
use crate::translate::{self, Dialect, Op, TranslateError};
use crate::types::ProtocolVersion;

/// Why a streaming call is answered through `SendMessage`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DowngradeCause {
    /// The card does not declare streaming.
    DeclaredOff,
    /// The integration sets `streaming = "off"`.
    ConfigOff,
    /// The agent refused a stream earlier; streaming is overridden off until the next refresh.
    Override,
    /// The agent refused this very stream with UnsupportedOperationError; retried as SendMessage.
    Refused,
}

impl DowngradeCause {
    /// Every cause, in the order of [`crate::metrics::DOWNGRADE_CAUSES`].
    pub const ALL: [DowngradeCause; 4] = [
        DowngradeCause::DeclaredOff,
        DowngradeCause::ConfigOff,
        DowngradeCause::Override,
        DowngradeCause::Refused,
    ];

    /// Bounded metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            DowngradeCause::DeclaredOff => "declared_off",
            DowngradeCause::ConfigOff => "config_off",
            DowngradeCause::Override => "override",
            DowngradeCause::Refused => "refused",
        }
    }
}

/// How a streaming-capable call is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamPlan {
    /// Not a streaming operation: forwarded as is.
    Unary,
    /// Stream upstream; if the agent refuses with UnsupportedOperationError, retry once as
    /// SendMessage unless `streaming = "required"`.
    Stream,
    /// Send as SendMessage and answer as a one-event SSE stream.
    Downgrade(DowngradeCause),
}

/// The facts of a request that policy reads (the original bytes are kept by the caller).
#[derive(Debug, Clone, Copy)]
pub struct Facts<'a> {
    /// The route (JSON-RPC or HTTP+JSON; card requests never reach policy).
    pub route: &'a Route,
    /// HTTP method.
    pub http_method: &'a str,
    /// Query string, without `?`.
    pub query: Option<&'a str>,
    /// Every `A2A-Egress-Data-Class` header line.
    pub data_class: &'a DataClasses,
    /// `A2A-Version` header.
    pub a2a_version: Option<&'a str>,
    /// The parsed JSON-RPC request (JSON-RPC route).
    pub rpc: Option<&'a RpcRequest>,
    /// The facts of the HTTP+JSON body (HTTP+JSON route).
    pub rest_body: Option<&'a RequestFacts>,
    /// `[policy] default_data_class`.
    pub default_data_class: &'a str,
    /// The request body as the caller sent it (the guard scans it).
    pub body: &'a [u8],
    /// An id the gateway made for this request alone: a JSON-RPC request it makes from an
    /// HTTP+JSON one carries it in its `id` ([`translate::binding::gateway_id`]).
    pub request_id: &'a str,
}

/// What to send upstream.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The operation.
    pub method: Method,
    /// The binding the caller speaks, which every answer is made in before anything else reads
    /// it (the agent's own is `dialect.binding`).
    pub binding: Binding,
    /// Streaming handling.
    pub stream: StreamPlan,
    /// Tenant applied upstream (params.tenant or path prefix).
    pub tenant: Option<String>,
    /// Upstream path and query for the call as the caller meant it.
    pub upstream_path: String,
    /// The same for `SendMessage` (downgrades and the refused-stream retry).
    pub send_path: String,
    /// The HTTP method of the call when it is not the caller's: a 0.3 HTTP+JSON agent reads a
    /// subscription with `GET` (its proto's route), where a 1.0 caller may `POST`.
    pub upstream_method: Option<&'static str>,
    /// The caller's JSON-RPC body with `params.tenant` spliced in, when the caller sent none;
    /// `None` means the original bytes are forwarded unchanged.
    pub rewritten_body: Option<Bytes>,
    /// `A2A-Version` to send (the agent's version; never sent to a 0.3 agent).
    pub version: String,
    /// What the agent speaks: a 0.3 agent's requests and answers are translated
    /// ([`crate::translate`]); `rewritten_body` then holds the 0.3 request.
    pub dialect: Dialect,
    /// What the integration's guard found in a message that leaves (recorded or redacted
    /// findings; a refusing one is a [`Deny::DataDetected`] instead).
    pub findings: Vec<guard::Finding>,
    /// Bytes of the body the guard left unscanned and `on_unscanned = "allow"` let leave.
    pub unscanned_bytes: usize,
    /// The JSON text of the `id` of the JSON-RPC request the gateway made from an HTTP+JSON
    /// caller's, which the agent's answers must carry; `None` when it made none.
    pub rpc_id: Option<String>,
}

impl Plan {
    /// Whether the call moves between the two HTTP bindings ([`translate::binding`]): the caller
    /// speaks one and the agent the other (a gRPC agent's calls are made from either).
    pub fn crosses(&self) -> bool {
        !self.dialect.grpc() && self.binding != self.dialect.binding
    }
}

/// The data classes a request declares: every `A2A-Egress-Data-Class` line counts, and each line
/// is a comma-separated list of class names (empty elements ignored, names case-insensitive).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataClasses {
    /// The lowercased names from every line, in order; empty when the header is absent or blank.
    Named(Vec<String>),
    /// A line is not visible ASCII text: refused, never read as "no class".
    Unreadable,
}

impl DataClasses {
    /// Reads the raw header lines (`HeaderMap::get_all(..)`, each line's bytes).
    pub fn from_lines<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> DataClasses {
        let mut names = Vec::new();
        for line in lines {
            let Some(text) = std::str::from_utf8(line)
                .ok()
                .filter(|t| t.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b)))
            else {
                return DataClasses::Unreadable;
            };
            names.extend(
                text.split(',')
                    .map(|c| c.trim().to_ascii_lowercase())
                    .filter(|c| !c.is_empty()),
            );
        }
        DataClasses::Named(names)
    }
}

/// Checks the request's data classes against the integration's allowed ones; a request naming
/// none is of `default`.
pub fn check_data_classes(
    classes: &DataClasses,
    default: &str,
    allowed: &[String],
) -> Result<(), Deny> {
    let named = match classes {
        DataClasses::Unreadable => return Err(Deny::InvalidDataClass),
        DataClasses::Named(n) => n,
    };
    let default = [default.to_owned()];
    let classes = if named.is_empty() {
        &default[..]
    } else {
        named
    };
    match classes.iter().find(|c| !allowed.contains(c)) {
        Some(c) => Err(Deny::PolicyDenied {
            class: sanitize_echo(c),
        }),
        None => Ok(()),
    }
}

/// Checks a request's `Content-Type` before its body is parsed. JSON-RPC requests are
/// `application/json` (A2A JSON-RPC binding); HTTP+JSON bodies `application/a2a+json` or
/// `application/json` (an HTTP+JSON request without a body is not checked). Parameters and case
/// are ignored, and a request without the header passes (it is parsed as JSON). A wrong type is refused whatever the body holds, JSON or not, so the
/// answer never depends on whether the body happens to parse: the official Python SDK server
/// (a2a-sdk 1.3.0) does not look at the header at all and answers a non-JSON body with -32700
/// (JSON-RPC) or 400 INVALID_REQUEST (HTTP+JSON), the JS SDK server answers -32005 on its JSON-RPC
/// endpoint, which is what the gateway answers on both bindings (the HTTP+JSON form of -32005).
pub fn check_content_type(
    route: &Route,
    content_type: Option<&[u8]>,
    has_body: bool,
) -> Result<(), Deny> {
    let Some(ct) = content_type.filter(|_| has_body || matches!(route, Route::JsonRpc { .. }))
    else {
        return Ok(());
    };
    let essence = std::str::from_utf8(ct)
        .ok()
        .and_then(|c| c.split(';').next())
        .map(|e| e.trim().to_ascii_lowercase());
    let ok = matches!(
        (route, essence.as_deref()),
        (_, Some("application/json")) | (Route::Rest { .. }, Some("application/a2a+json"))
    );
    if ok {
        Ok(())
    } else {
        Err(Deny::UnsupportedContentType)
    }
}

/// Checks the integration's status (before reading anything else).
pub fn check_status(state: &IntegrationState) -> Result<(), Deny> {
    match &state.status {
        Status::Blocked { .. } => Err(Deny::IntegrationBlocked),
        Status::Pending | Status::Unusable { .. } => Err(Deny::NoUsableProfile),
        Status::Usable { .. } => Ok(()),
    }
}

/// Whether a JSON-RPC or HTTP+JSON request may be read at all, before its operation is known:
/// as [`check_status`], except that an integration blocked by its lockfile still serves its
/// running tasks, and one that falls back may send new delegations elsewhere ([`lock_route`]
/// and [`decide`] then refuse what is left).
pub fn check_admission(state: &IntegrationState) -> Result<(), Deny> {
    if state.serving().is_some() || state.lock.fallback.is_some() {
        return Ok(());
    }
    check_status(state)
}

/// Operations on a task that already runs: what a blocked integration still serves.
fn continues_task(m: Method) -> bool {
    matches!(
        m,
        Method::GetTask | Method::CancelTask | Method::SubscribeToTask
    )
}

/// The operation a request names (the JSON-RPC method, or the HTTP+JSON route).
pub fn method_of(f: &Facts<'_>) -> Method {
    match (f.route, f.rpc) {
        (Route::JsonRpc { .. }, Some(rpc)) => rpc.method,
        (Route::Rest { path, .. }, _) => Method::from_rest(f.http_method, path),
        _ => Method::Unknown,
    }
}

/// Which integration's state decides a request to `state` (pure). Its own, except for a new
/// delegation (a message send) while a breaking change against its lockfile falls back
/// (`on_breaking = "fallback:<name>"`): then the fallback's, if that integration's profile
/// satisfies this lockfile itself, else the send is refused as blocked. Calls on existing tasks
/// always stay with the integration's own agent, which holds them.
pub fn lock_route(
    snapshot: &Snapshot,
    state: &Arc<IntegrationState>,
    method: Method,
) -> Result<Arc<IntegrationState>, Deny> {
    let Some(to) = &state.lock.fallback else {
        return Ok(state.clone());
    };
    if !method.sends_message() {
        return Ok(state.clone());
    }
    let streaming_required = state.integration.streaming == StreamingMode::Required;
    match (snapshot.get(to), state.lock.lock.as_deref()) {
        (Some(fb), Some(lock)) if satisfies(fb, lock, streaming_required) => Ok(fb.clone()),
        _ => Err(Deny::IntegrationBlocked),
    }
}

/// Decides a JSON-RPC or HTTP+JSON request: status, binding and operation, lockfile block, data
/// class, version, method, tenant, media types, streaming, then the upstream paths.
pub fn decide(state: &IntegrationState, f: &Facts<'_>) -> Result<Plan, Deny> {
    let Some((profile, upstream)) = state.serving() else {
        return Err(check_status(state).err().unwrap_or(Deny::NoUsableProfile));
    };
    let iface = profile.interface.as_ref().ok_or(Deny::NoUsableProfile)?;
    // The compiler makes only callable interfaces usable; anything else is no usable profile.
    let dialect = Dialect::of(iface).ok_or(Deny::NoUsableProfile)?;
    let integration = &state.integration;
    let called = called_binding(integration, dialect, f.route)?;
    let (method, caller_tenant, rest_path) = operation(f, called)?;
    // Blocked by a breaking change against the lockfile: running tasks only.
    if matches!(state.status, Status::Blocked { .. }) && !continues_task(method) {
        return Err(Deny::IntegrationBlocked);
    }
    check_data_classes(
        f.data_class,
        f.default_data_class,
        &integration.data_classes,
    )?;
    // The caller speaks the effective card's version: 1.0, also in front of a 0.3 agent.
    let face = if dialect.translates() {
        dialect.caller_version()
    } else {
        iface.version.as_str()
    };
    check_version(f.a2a_version, face)?;
    check_method(state, profile, method)?;
    let tenant = integration.tenant.clone().or_else(|| iface.tenant.clone());
    if let Some(c) = &caller_tenant
        && Some(c) != tenant.as_ref()
    {
        return Err(Deny::TenantMismatch);
    }
    if method.sends_message() {
        check_parts(state, profile, f)?;
    }
    let stream = stream_plan(state, profile, method)?;
    let (upstream_path, send_path, mut rewritten_body) =
        paths(&upstream.base_path, f, rest_path, tenant.as_deref())?;
    let mut findings = Vec::new();
    let mut unscanned_bytes = 0;
    if let Some(g) = integration
        .guard
        .as_ref()
        .filter(|_| method.sends_message())
    {
        // What leaves is scanned: the body with the tenant spliced in when it was.
        let body = rewritten_body.as_deref().unwrap_or(f.body);
        let shape = match f.route {
            Route::Rest { .. } => guard::Shape::Rest,
            _ => guard::Shape::JsonRpc,
        };
        let screened = screen_content(g, shape, body, &integration.data_classes)?;
        if let Some(r) = screened.redacted {
            rewritten_body = Some(Bytes::from(r));
        }
        findings = screened.findings;
        unscanned_bytes = screened.unscanned_bytes;
    }
    let mut plan = Plan {
        method,
        binding: called,
        stream,
        tenant,
        upstream_path,
        send_path,
        upstream_method: None,
        rewritten_body,
        version: iface.version.clone(),
        dialect,
        findings,
        unscanned_bytes,
        rpc_id: None,
    };
    to_agent(&mut plan, f, rest_path, &upstream.base_path)?;
    Ok(plan)
}

/// Makes `plan`, decided for the caller's binding and version, the call the agent reads: over
/// gRPC; on the other HTTP binding ([`as_other_binding`]); in 0.3 ([`as_03`]), after the move.
fn to_agent(
    plan: &mut Plan,
    f: &Facts<'_>,
    rest_path: Option<&str>,
    base: &str,
) -> Result<(), Deny> {
    let dialect = plan.dialect;
    match (dialect.grpc(), dialect.translates()) {
        (true, false) => return as_grpc(plan, f, rest_path),
        (true, true) => return as_grpc03(plan, f, rest_path),
        _ => {}
    }
    // The 1.0 request in the agent's binding: moved to it when the caller's is the other one.
    let route = if plan.binding == dialect.binding {
        rest_path.map(|p| (p.to_owned(), f.query.map(str::to_owned)))
    } else {
        as_other_binding(plan, f, rest_path, base)?
    };
    if dialect.translates() {
        let held;
        let body: &[u8] = match (&plan.rewritten_body, &route, f.rpc) {
            (Some(b), _, _) => {
                held = b.clone();
                &held
            }
            (None, Some(_), _) => f.body,
            (None, None, Some(rpc)) => rpc.body(),
            (None, None, None) => return Err(Deny::InvalidRequest("missing body")),
        };
        let route = route.as_ref().map(|(p, q)| (p.as_str(), q.as_deref()));
        as_03(plan, route, body, base)?;
    }
    Ok(())
}

/// The binding a request is called on, which its answers are made in: the route's, when the
/// integration's effective card offers it for the agent ([`crate::config::Integration::offered`]).
fn called_binding(
    integration: &crate::config::Integration,
    dialect: Dialect,
    route: &Route,
) -> Result<Binding, Deny> {
    let b = match route {
        Route::Rest { .. } => Binding::HttpJson,
        _ => Binding::JsonRpc,
    };
    (integration.offered(dialect.binding).contains(&b))
        .then_some(b)
        .ok_or(Deny::BindingNotOffered)
}

/// The refusal of a request that cannot be said to the agent.
fn refused(method: Method) -> impl Fn(TranslateError) -> Deny {
    move |e| match e {
        TranslateError::NotInVersion { .. } => Deny::NotInAgentVersion(method),
        TranslateError::Untranslatable { field, why } => Deny::Untranslatable { field, why },
        // A request's tree bound is not counted; only its values are, by the translator's index
        // (as many as a tree within the budget holds: far past the default body cap).
        TranslateError::TooLarge { .. } => Deny::Untranslatable {
            field: "body".into(),
            why: "is too large to read",
        },
    }
}

/// Makes `plan` the call to an HTTP agent on the binding the caller does not speak
/// ([`translate::binding`]), made from the body that would have gone to an agent on the caller's
/// (tenant spliced, guard's redaction included): a JSON-RPC request as its HTTP+JSON route, or an
/// HTTP+JSON one as a JSON-RPC request posted to the interface. Returns the HTTP+JSON route below
/// the interface and the tenant, with the query, when the agent's binding is HTTP+JSON.
fn as_other_binding(
    plan: &mut Plan,
    f: &Facts<'_>,
    rest_path: Option<&str>,
    base: &str,
) -> Result<Option<(String, Option<String>)>, Deny> {
    let op = Op::from_v10(plan.method.as_str()).ok_or(Deny::MethodNotFound)?;
    let refused = refused(plan.method);
    match rest_path {
        Some(path) => {
            let body = plan.rewritten_body.as_deref().unwrap_or(f.body);
            let tenant = plan.tenant.as_deref();
            let id = translate::binding::gateway_id(f.request_id);
            let rpc = translate::binding::rest_request_to_rpc(op, path, f.query, body, tenant, &id)
                .map_err(refused)?;
            plan.rpc_id = Some(id);
            let at = if base.is_empty() { "/" } else { base };
            plan.upstream_path = at.to_owned();
            plan.send_path = at.to_owned();
            plan.upstream_method = Some("POST");
            plan.rewritten_body = Some(Bytes::from(rpc));
            Ok(None)
        }
        None => {
            let rpc = f.rpc.ok_or(Deny::InvalidRequest("missing body"))?;
            let body = plan.rewritten_body.as_deref().unwrap_or(rpc.body());
            let call = translate::binding::rpc_request_to_rest(op, body).map_err(refused)?;
            let prefix = match &call.tenant {
                Some(t) => format!("{base}/{}", translate::binding::segment(t)),
                None => base.to_owned(),
            };
            plan.upstream_path = format!("{base}{}", call.path());
            plan.send_path = format!("{prefix}/message:send");
            plan.upstream_method = Some(call.method);
            let route = (call.route, call.query);
            plan.rewritten_body = Some(Bytes::from(call.body));
            Ok(Some(route))
        }
    }
}

/// Makes `plan` the call to a gRPC agent: the rpc's path (and SendMessage's, for a downgrade)
/// and its protobuf request, made from the JSON-RPC body that would have gone to a JSON-RPC
/// agent (tenant spliced, guard's redaction included), or from an HTTP+JSON request (its route
/// `rest_path`, query and body, the applied tenant), or refused before anything leaves.
fn as_grpc(plan: &mut Plan, f: &Facts<'_>, rest_path: Option<&str>) -> Result<(), Deny> {
    let op = Op::from_v10(plan.method.as_str()).ok_or(Deny::MethodNotFound)?;
    let pb = match rest_path {
        // HTTP+JSON: the route's and the query's parameters, the body, the applied tenant.
        Some(path) => {
            let body = plan.rewritten_body.as_deref().unwrap_or(f.body);
            let tenant = plan.tenant.as_deref();
            translate::grpc::rest_request_to_pb(op, path, f.query, body, tenant)
        }
        None => {
            let rpc = f.rpc.ok_or(Deny::InvalidRequest("missing body"))?;
            let body = plan.rewritten_body.as_deref().unwrap_or(rpc.body());
            translate::grpc::request_to_pb(op, body)
        }
    };
    let pb = pb.map_err(|e| match e {
        TranslateError::Untranslatable { field, why } => Deny::Untranslatable { field, why },
        _ => Deny::Untranslatable {
            field: "params".into(),
            why: "cannot be said in protobuf",
        },
    })?;
    plan.upstream_path = translate::grpc::path(op).to_owned();
    plan.send_path = translate::grpc::path(Op::SendMessage).to_owned();
    plan.rewritten_body = Some(Bytes::from(pb));
    Ok(())
}

/// Makes `plan` the call to a 0.3 gRPC agent ([`translate::grpc03`]): the 1.0 request as
/// HTTP+JSON (moved there from a JSON-RPC caller's, the tenant spliced and the guard's redaction
/// included), then as the 0.3 HTTP+JSON request, then as the rpc's protobuf request; or refused
/// (an operation 0.3 lacks, a field it cannot say) before anything leaves.
fn as_grpc03(plan: &mut Plan, f: &Facts<'_>, rest_path: Option<&str>) -> Result<(), Deny> {
    let op = Op::from_v10(plan.method.as_str()).ok_or(Deny::MethodNotFound)?;
    let refused = refused(plan.method);
    let moved;
    let (route, query, body): (&str, Option<&str>, &[u8]) = match rest_path {
        Some(p) => (p, f.query, plan.rewritten_body.as_deref().unwrap_or(f.body)),
        None => {
            let rpc = f.rpc.ok_or(Deny::InvalidRequest("missing body"))?;
            let body = plan.rewritten_body.as_deref().unwrap_or(rpc.body());
            moved = translate::binding::rpc_request_to_rest(op, body).map_err(&refused)?;
            (&moved.route, moved.query.as_deref(), &moved.body)
        }
    };
    let r03 = translate::rest_request_to03(op, route, query, body).map_err(&refused)?;
    let pb = translate::grpc03::request_to_pb(op, &r03.path, &r03.body).map_err(&refused)?;
    let path = translate::grpc03::path(op).ok_or(Deny::NotInAgentVersion(plan.method))?;
    plan.upstream_path = path.to_owned();
    plan.send_path = translate::grpc03::path(Op::SendMessage)
        .unwrap_or_default()
        .to_owned();
    plan.rewritten_body = Some(Bytes::from(pb));
    Ok(())
}

/// Makes `plan` the call to a 0.3 agent from the 1.0 request in the agent's binding (`route`,
/// the HTTP+JSON route and query below the interface, when it is one; `body`): the translated
/// body, and over HTTP+JSON 0.3's method and route. 0.3 HTTP+JSON has no tenant (a 0.3
/// integration has none): the agent's routes sit right below its URL (`base`), under 0.3's `/v1`.
fn as_03(
    plan: &mut Plan,
    route: Option<(&str, Option<&str>)>,
    body: &[u8],
    base: &str,
) -> Result<(), Deny> {
    let t = to_03(plan.method, route, body)?;
    plan.rewritten_body = Some(t.body);
    if let Some((m, path)) = t.rest {
        plan.upstream_path = format!("{base}{path}");
        plan.send_path = format!("{base}/v1/message:send");
        plan.upstream_method = Some(m);
    }
    Ok(())
}

/// What the guard let leave: its findings (recorded or redacted) and the redacted body, if any.
#[derive(Debug)]
pub struct Screened {
    /// Recorded and redacted findings, in scan order.
    pub findings: Vec<guard::Finding>,
    /// Bytes of content left unscanned (only when `on_unscanned = "allow"` let them leave).
    pub unscanned_bytes: usize,
    /// The body with every redacted match replaced; `None`: forwarded unchanged.
    pub redacted: Option<String>,
}

/// Runs an integration's guard on a message send's `body` (JSON-RPC or HTTP+JSON, 1.0): refuses
/// with [`Deny::DataDetected`] (detector and JSON path, never the matched text) when a finding
/// refuses or a redaction cannot be made, with [`Deny::PolicyDenied`] when a recorded finding's
/// data class is not one the integration allows (the request's classes are the declared ones plus
/// the detected ones), else returns what leaves (pure).
pub fn screen_content(
    g: &IntegrationGuard,
    shape: guard::Shape,
    body: &[u8],
    allowed: &[String],
) -> Result<Screened, Deny> {
    let text = std::str::from_utf8(body).map_err(|_| Deny::ParseError)?;
    let verdict = guard::scan_request(g.all(), g.policy(), text, shape);
    if let Some(refused) = verdict.refusal() {
        return Err(Deny::DataDetected {
            detector: refused.detector.clone(),
            path: refused.path.clone(),
        });
    }
    if let Some(class) = verdict
        .classes_leaving()
        .into_iter()
        .find(|c| !allowed.iter().any(|a| a == c))
    {
        return Err(Deny::PolicyDenied {
            class: sanitize_echo(class),
        });
    }
    let redacted = match verdict.action() {
        Some(Action::Redact) => Some(verdict.redact(text).map_err(|_| {
            // The first redaction names the refusal: it could not be made safely.
            let f = verdict
                .findings
                .iter()
                .find(|f| f.action == Action::Redact)
                .expect("a Redact verdict has a Redact finding");
            Deny::DataDetected {
                detector: f.detector.clone(),
                path: f.path.clone(),
            }
        })?),
        _ => None,
    };
    Ok(Screened {
        unscanned_bytes: verdict.unscanned_bytes,
        findings: verdict.findings,
        redacted,
    })
}

/// A request as the 0.3 agent's: its body, and over HTTP+JSON its HTTP method and path (below
/// the interface URL, with the query).
struct To03 {
    body: Bytes,
    rest: Option<(&'static str, String)>,
}

/// The request as the 0.3 agent's: translated from the 1.0 request in the agent's binding (the
/// guard's redaction included), or refused (an operation 0.3 lacks, a field it cannot say)
/// before anything leaves.
fn to_03(method: Method, route: Option<(&str, Option<&str>)>, body: &[u8]) -> Result<To03, Deny> {
    let op = Op::from_v10(method.as_str()).ok_or(Deny::MethodNotFound)?;
    if let Some((path, query)) = route {
        let r = translate::rest_request_to03(op, path, query, body).map_err(refused(method))?;
        return Ok(To03 {
            body: Bytes::from(r.body),
            rest: Some((r.method, r.path)),
        });
    }
    let b = translate::request_to03(op, body).map_err(refused(method))?;
    Ok(To03 {
        body: Bytes::from(b),
        rest: None,
    })
}

/// The operation, the tenant the caller named and (HTTP+JSON) the path below the interface, for
/// the binding the caller is called on.
fn operation<'f>(
    f: &Facts<'f>,
    binding: Binding,
) -> Result<(Method, Option<String>, Option<&'f str>), Deny> {
    match (f.route, binding) {
        (Route::JsonRpc { .. }, Binding::JsonRpc) => {
            if f.http_method != "POST" {
                return Err(Deny::InvalidRequest("JSON-RPC requests use POST"));
            }
            let rpc = f.rpc.ok_or(Deny::InvalidRequest("missing body"))?;
            Ok((rpc.method, rpc.params.tenant.clone(), None))
        }
        (Route::Rest { tenant, path, .. }, Binding::HttpJson) => {
            let body_tenant = f.rest_body.and_then(|b| b.tenant.clone());
            if let (Some(p), Some(b)) = (tenant, &body_tenant)
                && p != b
            {
                return Err(Deny::TenantMismatch);
            }
            Ok((
                Method::from_rest(f.http_method, path),
                tenant.clone().or(body_tenant),
                Some(path.as_str()),
            ))
        }
        _ => Err(Deny::BindingNotOffered),
    }
}

/// A2A specification, "Protocol Versioning": the caller's `A2A-Version`, when it sends one, must
/// be the interface's; its patch takes no part.
fn check_version(header: Option<&str>, offered: &str) -> Result<(), Deny> {
    match header.map(str::trim).filter(|v| !v.is_empty()) {
        Some(v)
            if ProtocolVersion::from_header(v)
                .ok()
                .map(|v| v.to_string())
                .as_deref()
                != Some(offered) =>
        {
            Err(Deny::VersionNotSupported {
                offered: offered.to_owned(),
            })
        }
        _ => Ok(()),
    }
}

/// Whether the profile lets `method` through at all.
fn check_method(state: &IntegrationState, profile: &Profile, method: Method) -> Result<(), Deny> {
    match method {
        Method::Unknown | Method::Card | Method::Jwks => Err(Deny::MethodNotFound),
        m if m.is_push() && !profile.push => Err(Deny::MethodNotAllowed(m)),
        // The effective card is the only card a caller sees: forwarding the agent's extended
        // card would hand out the agent's own URLs and skills outside the integration.
        Method::GetExtendedAgentCard => Err(Deny::MethodNotAllowed(method)),
        Method::SubscribeToTask if !state.streaming_allowed() => {
            Err(Deny::MethodNotAllowed(method))
        }
        _ => Ok(()),
    }
}

/// A message's parts: present, and each media type one the accepted skills take.
fn check_parts(state: &IntegrationState, profile: &Profile, f: &Facts<'_>) -> Result<(), Deny> {
    let facts = match f.rpc {
        Some(rpc) => Some(&rpc.params),
        None => f.rest_body,
    };
    let Some(parts) = facts.and_then(|p| p.parts.as_ref()) else {
        return Err(Deny::InvalidParams("message.parts is required"));
    };
    let modes: Vec<String> = state
        .integration
        .skills
        .iter()
        .filter_map(|s| profile.skills.get(s))
        .flat_map(|s| s.input.iter().cloned())
        .collect();
    match parts.iter().find(|mt| !media_type_accepted(mt, &modes)) {
        Some(mt) => Err(Deny::ContentTypeNotSupported {
            media_type: sanitize_echo(mt),
        }),
        None => Ok(()),
    }
}

/// Streamed, downgraded (and why) or unary.
fn stream_plan(
    state: &IntegrationState,
    profile: &Profile,
    method: Method,
) -> Result<StreamPlan, Deny> {
    let mode = state.integration.streaming;
    Ok(match method {
        Method::SendStreamingMessage if state.streaming_allowed() => StreamPlan::Stream,
        Method::SendStreamingMessage if mode == StreamingMode::Required => {
            return Err(Deny::StreamingRequired);
        }
        Method::SendStreamingMessage => StreamPlan::Downgrade(if !profile.streaming {
            DowngradeCause::DeclaredOff
        } else if mode == StreamingMode::Off {
            DowngradeCause::ConfigOff
        } else {
            DowngradeCause::Override
        }),
        _ => StreamPlan::Unary,
    })
}

/// The upstream path of the call, the path a downgrade sends to, and the body rewritten with
/// the tenant when it must be injected (JSON-RPC).
fn paths(
    base: &str,
    f: &Facts<'_>,
    rest_path: Option<&str>,
    tenant: Option<&str>,
) -> Result<(String, String, Option<Bytes>), Deny> {
    Ok(match rest_path {
        None => {
            let p = if base.is_empty() {
                "/".to_owned()
            } else {
                base.to_owned()
            };
            let rpc = f.rpc.ok_or(Deny::InvalidRequest("missing body"))?;
            (p.clone(), p, rpc.forward_body(tenant))
        }
        Some(path) => {
            let prefix = match tenant {
                Some(t) => format!("{base}/{}", translate::binding::segment(t)),
                None => base.to_owned(),
            };
            let q = f.query.map(|q| format!("?{q}")).unwrap_or_default();
            (
                format!("{prefix}{path}{q}"),
                format!("{prefix}/message:send{q}"),
                None,
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Integration;
    use crate::profile::{Profile, SkillProfile};
    use crate::proxy::body::parse_jsonrpc;
    use crate::proxy::route::Route;
    use serde_json::{Value, json};
    use std::sync::Arc;

    #[test]
    fn every_downgrade_cause_is_a_label_metrics_creates_at_zero() {
        let causes = DowngradeCause::ALL.map(DowngradeCause::as_str);
        assert_eq!(causes, crate::metrics::DOWNGRADE_CAUSES);
    }

    fn integration(streaming: StreamingMode) -> Integration {
        Integration::builder("echo")
            .origin("http://127.0.0.1:9")
            .skills(&["echo"])
            .data_classes(&["internal", "public"])
            .streaming(streaming)
            .max_body_bytes(1000)
            .build()
    }

    fn profile(binding: Binding, streaming: bool, tenant: Option<&str>) -> Profile {
        let url = match binding {
            Binding::JsonRpc => "http://127.0.0.1:9/jsonrpc",
            Binding::HttpJson | Binding::Grpc => "http://127.0.0.1:9/rest",
        };
        Profile::builder()
            .card_digest("sha256:0")
            .url(url)
            .binding(binding)
            .tenant(tenant)
            .streaming(streaming)
            .skill("echo")
            .skill_with(
                "pdf",
                SkillProfile::builder().input(&["application/pdf"]).build(),
            )
            .build()
    }

    fn state(i: Integration, p: Profile) -> IntegrationState {
        crate::state::IntegrationState::for_tests(i, p)
    }

    fn rpc(method: &str, params: Value) -> RpcRequest {
        parse_jsonrpc(&Bytes::from(
            json!({"jsonrpc": "2.0", "id": "r1", "method": method, "params": params}).to_string(),
        ))
        .unwrap()
    }

    fn text_msg() -> Value {
        json!({"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}})
    }

    fn facts<'a>(route: &'a Route, rpc: Option<&'a RpcRequest>) -> Facts<'a> {
        Facts {
            route,
            http_method: "POST",
            query: None,
            data_class: &NO_CLASS,
            a2a_version: None,
            rpc,
            rest_body: None,
            default_data_class: "internal",
            body: rpc.map_or(&[][..], |r| &r.body()[..]),
            request_id: "r-1",
        }
    }

    static NO_CLASS: DataClasses = DataClasses::Named(Vec::new());

    static RPC: Route = Route::JsonRpc {
        name: String::new(),
    };

    /// A 0.3 JSON-RPC agent: the caller speaks 1.0 to the gateway, the request leaves in 0.3,
    /// and what 0.3 cannot say is refused before it leaves.
    #[test]
    fn a_0_3_agent_gets_the_translated_request_or_nothing() {
        let mut p = profile(Binding::JsonRpc, true, None);
        p.interface.as_mut().unwrap().version = "0.3".into();
        let s = state(integration(StreamingMode::Preferred), p);
        let r = rpc("SendMessage", text_msg());
        let plan = decide(&s, &facts(&RPC, Some(&r))).unwrap();
        assert!(plan.dialect.translates());
        let sent: Value = serde_json::from_slice(&plan.rewritten_body.unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({"jsonrpc":"2.0","id":"r1","method":"message/send","params":{"message":
                {"kind":"message","messageId":"m","role":"user","parts":[{"kind":"text","text":"hi"}]}}})
        );
        let mut f = facts(&RPC, Some(&r));
        f.a2a_version = Some("1.0");
        assert!(decide(&s, &f).is_ok(), "the caller speaks 1.0");
        f.a2a_version = Some("0.3");
        assert!(matches!(
            decide(&s, &f),
            Err(Deny::VersionNotSupported { offered }) if offered == "1.0"
        ));
        let r = rpc("ListTasks", json!({}));
        assert_eq!(
            decide(&s, &facts(&RPC, Some(&r))).unwrap_err(),
            Deny::NotInAgentVersion(Method::ListTasks)
        );
        let r = rpc(
            "SendMessage",
            json!({"message": {"messageId": "m", "role": "ROLE_UNSPECIFIED", "parts": [{"text": "x"}]}}),
        );
        let d = decide(&s, &facts(&RPC, Some(&r))).unwrap_err();
        assert_eq!(d.reason(), "UNTRANSLATABLE");
        assert!(
            d.message().contains("params.message.role"),
            "{}",
            d.message()
        );
    }

    /// A 0.3 HTTP+JSON agent: the caller's 1.0 route, method and body leave as 0.3's (its `/v1`
    /// route, `GET` for a subscription, the proto's body), and what 0.3 lacks is refused here.
    #[test]
    fn a_0_3_http_json_agent_gets_its_route_method_and_body() {
        let mut p = profile(Binding::HttpJson, true, None);
        p.interface.as_mut().unwrap().version = "0.3".into();
        let s = state(integration(StreamingMode::Preferred), p);
        let route = |path: &str| Route::Rest {
            name: "echo".into(),
            tenant: None,
            path: path.into(),
        };
        let send = route("/message:send");
        let body = text_msg().to_string();
        let rest = crate::proxy::body::parse_rest_body(body.as_bytes(), true).unwrap();
        let mut f = facts(&send, None);
        f.rest_body = Some(&rest);
        f.body = body.as_bytes();
        let plan = decide(&s, &f).unwrap();
        assert_eq!(plan.upstream_path, "/rest/v1/message:send");
        assert_eq!(plan.send_path, "/rest/v1/message:send");
        assert_eq!(plan.upstream_method, Some("POST"));
        let sent: Value = serde_json::from_slice(&plan.rewritten_body.unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({"message": {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "hi"}]},
                "configuration": {"blocking": true}})
        );
        let sub = route("/tasks/a%20b:subscribe");
        let plan = decide(&s, &facts(&sub, None)).unwrap();
        assert_eq!(
            (plan.upstream_method, plan.upstream_path.as_str()),
            (Some("GET"), "/rest/v1/tasks/a%20b:subscribe")
        );
        assert_eq!(plan.rewritten_body.as_deref(), Some(&b""[..]));
        let list = route("/tasks");
        let mut f = facts(&list, None);
        f.http_method = "GET";
        assert_eq!(
            decide(&s, &f).unwrap_err(),
            Deny::NotInAgentVersion(Method::ListTasks)
        );
    }

    /// A JSON-RPC caller in front of an HTTP+JSON agent, and an HTTP+JSON caller in front of a
    /// JSON-RPC one, when the integration offers the caller's binding: the agent's route, method
    /// and body; a binding not offered is refused.
    #[test]
    fn a_caller_on_the_other_binding_gets_the_agents() {
        let offer = |b: &[Binding]| {
            Integration::builder("echo")
                .origin("http://127.0.0.1:9")
                .skills(&["echo"])
                .data_classes(&["internal", "public"])
                .offer(b)
                .build()
        };
        let rest_agent = state(
            offer(&[Binding::JsonRpc]),
            profile(Binding::HttpJson, true, Some("t 1")),
        );
        let jr = Route::JsonRpc {
            name: "echo".into(),
        };
        let req = rpc("GetTask", json!({"id": "a b", "historyLength": 2}));
        let plan = decide(&rest_agent, &facts(&jr, Some(&req))).unwrap();
        assert_eq!(plan.binding, Binding::JsonRpc);
        assert!(plan.crosses());
        assert_eq!(
            (plan.upstream_method, plan.upstream_path.as_str()),
            (Some("GET"), "/rest/t%201/tasks/a%20b?historyLength=2")
        );
        assert_eq!(plan.rewritten_body.as_deref(), Some(&b""[..]));
        let stream = rpc("SendStreamingMessage", text_msg());
        let plan = decide(&rest_agent, &facts(&jr, Some(&stream))).unwrap();
        assert_eq!(plan.upstream_path, "/rest/t%201/message:stream");
        assert_eq!(plan.send_path, "/rest/t%201/message:send");
        let sent: Value = serde_json::from_slice(&plan.rewritten_body.unwrap()).unwrap();
        assert_eq!(sent, text_msg());
        let rest = Route::Rest {
            name: "echo".into(),
            tenant: None,
            path: "/tasks/x".into(),
        };
        let mut f = facts(&rest, None);
        f.http_method = "GET";
        assert_eq!(
            decide(&rest_agent, &f).unwrap_err(),
            Deny::BindingNotOffered
        );

        let rpc_agent = state(
            offer(&[Binding::HttpJson, Binding::JsonRpc]),
            profile(Binding::JsonRpc, true, None),
        );
        let mut f = facts(&rest, None);
        f.http_method = "GET";
        f.query = Some("historyLength=1");
        let plan = decide(&rpc_agent, &f).unwrap();
        assert_eq!(plan.binding, Binding::HttpJson);
        assert_eq!(
            (plan.upstream_method, plan.upstream_path.as_str()),
            (Some("POST"), "/jsonrpc")
        );
        let sent: Value = serde_json::from_slice(&plan.rewritten_body.unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({"jsonrpc": "2.0", "id": "a2a-egress-r-1", "method": "GetTask",
                   "params": {"id": "x", "historyLength": 1}})
        );
        // Both offered: the caller's own binding is not moved.
        let plan = decide(&rpc_agent, &facts(&jr, Some(&req))).unwrap();
        assert!(!plan.crosses());
        assert_eq!(plan.rewritten_body, None);
    }

    #[test]
    fn plain_send_is_forwarded_unchanged() {
        let s = state(
            integration(StreamingMode::Preferred),
            profile(Binding::JsonRpc, true, None),
        );
        let r = rpc("SendMessage", text_msg());
        let plan = decide(&s, &facts(&RPC, Some(&r))).unwrap();
        assert_eq!(plan.stream, StreamPlan::Unary);
        assert_eq!(plan.upstream_path, "/jsonrpc");
        assert_eq!(
            plan.rewritten_body, None,
            "nothing to change: original bytes go"
        );
        assert_eq!(plan.version, "1.0");
    }

    #[test]
    fn tenant_is_injected_or_mismatch_refused() {
        let s = state(
            integration(StreamingMode::Preferred),
            profile(Binding::JsonRpc, true, Some("t1")),
        );
        let r = rpc("SendMessage", text_msg());
        let plan = decide(&s, &facts(&RPC, Some(&r))).unwrap();
        let sent: Value = serde_json::from_slice(&plan.rewritten_body.unwrap()).unwrap();
        assert_eq!(sent["params"]["tenant"], "t1");
        let mut m = text_msg();
        m["tenant"] = json!("t1");
        let r = rpc("SendMessage", m.clone());
        assert_eq!(
            decide(&s, &facts(&RPC, Some(&r))).unwrap().rewritten_body,
            None
        );
        m["tenant"] = json!("other");
        let r = rpc("SendMessage", m);
        assert_eq!(
            decide(&s, &facts(&RPC, Some(&r))).unwrap_err(),
            Deny::TenantMismatch
        );
        let mut i = integration(StreamingMode::Preferred);
        i.tenant = Some("override".into());
        let s = state(i, profile(Binding::HttpJson, true, Some("t1")));
        let route = Route::Rest {
            name: "echo".into(),
            tenant: None,
            path: "/tasks/a b".into(),
        };
        let mut f = facts(&route, None);
        f.http_method = "GET";
        f.query = Some("historyLength=2");
        let plan = decide(&s, &f).unwrap();
        assert_eq!(
            plan.upstream_path,
            "/rest/override/tasks/a b?historyLength=2"
        );
        let route = Route::Rest {
            name: "echo".into(),
            tenant: Some("t1".into()),
            path: "/tasks/a".into(),
        };
        let mut f = facts(&route, None);
        f.http_method = "GET";
        assert_eq!(decide(&s, &f).unwrap_err(), Deny::TenantMismatch);
    }

    #[test]
    fn data_classes() {
        let allowed = vec!["internal".to_string(), "public".to_string()];
        let lines = |ls: &[&[u8]]| DataClasses::from_lines(ls.iter().copied());
        let check = |c: &DataClasses, default| check_data_classes(c, default, &allowed);
        assert!(check(&lines(&[]), "internal").is_ok());
        assert!(check(&lines(&[b" , "]), "internal").is_ok());
        assert!(check(&lines(&[b"Public, internal"]), "x").is_ok());
        assert!(check(&lines(&[b"public", b"INTERNAL"]), "x").is_ok());
        assert_eq!(
            check(&lines(&[b"public,secret"]), "internal"),
            Err(Deny::PolicyDenied {
                class: "secret".into()
            })
        );
        // Every line counts, not only the first.
        assert_eq!(
            check(&lines(&[b"public", b"secret"]), "internal"),
            Err(Deny::PolicyDenied {
                class: "secret".into()
            })
        );
        assert!(check(&lines(&[]), "secret").is_err());
        // Unreadable lines are refused, never read as "no class" (the default).
        for bad in [&b"s\xc3\xa9cret"[..], b"\xff", b"a\x01b", b"pub\x7flic"] {
            assert_eq!(lines(&[b"public", bad]), DataClasses::Unreadable);
            assert_eq!(
                check(&lines(&[b"public", bad]), "internal"),
                Err(Deny::InvalidDataClass)
            );
        }
    }

    #[test]
    fn content_types() {
        let rest = Route::Rest {
            name: "r".into(),
            tenant: None,
            path: "/message:send".into(),
        };
        for (route, ct, ok) in [
            (&RPC, None, true),
            (&RPC, Some(&b"application/json"[..]), true),
            (&RPC, Some(b"Application/JSON ; charset=utf-8"), true),
            (&RPC, Some(b"application/a2a+json"), false),
            (&RPC, Some(b"text/plain"), false),
            (&RPC, Some(b"application/jsonx"), false),
            (&RPC, Some(b"application/json\xff"), false),
            (&rest, Some(b"application/a2a+json; charset=utf-8"), true),
            (&rest, Some(b"application/json"), true),
            (&rest, Some(b"text/plain"), false),
        ] {
            assert_eq!(
                check_content_type(route, ct, true).is_ok(),
                ok,
                "{:?}",
                ct.map(String::from_utf8_lossy)
            );
        }
        // A bodiless HTTP+JSON request (GET) is not refused for a stray header.
        assert!(check_content_type(&rest, Some(b"text/plain"), false).is_ok());
        assert!(check_content_type(&RPC, Some(b"text/plain"), false).is_err());
    }

    #[test]
    fn versions() {
        let s = state(
            integration(StreamingMode::Preferred),
            profile(Binding::JsonRpc, true, None),
        );
        let r = rpc("GetTask", json!({"id": "t"}));
        let mut f = facts(&RPC, Some(&r));
        f.a2a_version = Some("1.0.3");
        assert!(decide(&s, &f).is_ok());
        f.a2a_version = Some("0.3");
        assert_eq!(
            decide(&s, &f).unwrap_err(),
            Deny::VersionNotSupported {
                offered: "1.0".into()
            }
        );
        // The one Major.Minor parser decides: surrounding space and a patch are fine, and a
        // version spelt with leading zeros or followed by anything but a patch number is not 1.0.
        for ok in [" 1.0 ", "1.0", "1.0.0", ""] {
            f.a2a_version = Some(ok);
            assert!(decide(&s, &f).is_ok(), "{ok:?}");
        }
        for bad in ["01.0", "1.00", "1.0.x", "1.0.", "1.0.01", "1", "1.0.0.0"] {
            f.a2a_version = Some(bad);
            assert_eq!(
                decide(&s, &f).unwrap_err(),
                Deny::VersionNotSupported {
                    offered: "1.0".into()
                },
                "{bad:?}"
            );
        }
    }

    #[test]
    fn methods_allowed_by_profile() {
        let s = state(
            integration(StreamingMode::Preferred),
            profile(Binding::JsonRpc, false, None),
        );
        for (m, want) in [
            (
                "CreateTaskPushNotificationConfig",
                Deny::MethodNotAllowed(Method::CreatePushConfig),
            ),
            (
                "GetExtendedAgentCard",
                Deny::MethodNotAllowed(Method::GetExtendedAgentCard),
            ),
            (
                "SubscribeToTask",
                Deny::MethodNotAllowed(Method::SubscribeToTask),
            ),
            ("message/send", Deny::MethodNotFound),
        ] {
            let r = rpc(m, json!({}));
            assert_eq!(decide(&s, &facts(&RPC, Some(&r))).unwrap_err(), want, "{m}");
        }
        let route = Route::Rest {
            name: "echo".into(),
            tenant: None,
            path: "/message:send".into(),
        };
        assert_eq!(
            decide(&s, &facts(&route, None)).unwrap_err(),
            Deny::BindingNotOffered
        );
    }

    #[test]
    fn media_types_against_accepted_skills_only() {
        let s = state(
            integration(StreamingMode::Preferred),
            profile(Binding::JsonRpc, true, None),
        );
        // "pdf" is offered by the card but not an accepted skill of this integration.
        let r = rpc(
            "SendMessage",
            json!({"message": {"parts": [{"text": "a"}, {"url": "https://x/y.pdf", "mediaType": "application/pdf"}]}}),
        );
        assert_eq!(
            decide(&s, &facts(&RPC, Some(&r))).unwrap_err(),
            Deny::ContentTypeNotSupported {
                media_type: "application/pdf".into()
            }
        );
    }

    #[test]
    fn streaming_plans() {
        let r = rpc("SendStreamingMessage", text_msg());
        let on = state(
            integration(StreamingMode::Preferred),
            profile(Binding::JsonRpc, true, None),
        );
        assert_eq!(
            decide(&on, &facts(&RPC, Some(&r))).unwrap().stream,
            StreamPlan::Stream
        );
        let declared_off = state(
            integration(StreamingMode::Preferred),
            profile(Binding::JsonRpc, false, None),
        );
        assert_eq!(
            decide(&declared_off, &facts(&RPC, Some(&r)))
                .unwrap()
                .stream,
            StreamPlan::Downgrade(DowngradeCause::DeclaredOff)
        );
        let cfg_off = state(
            integration(StreamingMode::Off),
            profile(Binding::JsonRpc, true, None),
        );
        assert_eq!(
            decide(&cfg_off, &facts(&RPC, Some(&r))).unwrap().stream,
            StreamPlan::Downgrade(DowngradeCause::ConfigOff)
        );
        let mut overridden = on.clone();
        overridden.overrides.streaming_off = true;
        assert_eq!(
            decide(&overridden, &facts(&RPC, Some(&r))).unwrap().stream,
            StreamPlan::Downgrade(DowngradeCause::Override)
        );
        let required = state(
            integration(StreamingMode::Required),
            profile(Binding::JsonRpc, false, None),
        );
        assert_eq!(
            decide(&required, &facts(&RPC, Some(&r))).unwrap_err(),
            Deny::StreamingRequired
        );
    }

    #[test]
    fn status_refusals() {
        let i = Arc::new(integration(StreamingMode::Preferred));
        let r = rpc("GetTask", json!({}));
        let usable = state(
            integration(StreamingMode::Preferred),
            profile(Binding::JsonRpc, true, None),
        );
        let Status::Usable { profile, upstream } = usable.status.clone() else {
            panic!("usable: {:?}", usable.status)
        };
        let blocked = IntegrationState {
            status: Status::Blocked {
                reason: "x".into(),
                profile,
                upstream,
            },
            ..usable
        };
        let send = rpc("SendMessage", text_msg());
        assert_eq!(
            decide(&blocked, &facts(&RPC, Some(&send))).unwrap_err(),
            Deny::IntegrationBlocked
        );
        assert!(
            decide(&blocked, &facts(&RPC, Some(&r))).is_ok(),
            "a blocked integration still serves its running tasks"
        );
        let pending = IntegrationState::pending(i);
        assert_eq!(
            decide(&pending, &facts(&RPC, Some(&r))).unwrap_err(),
            Deny::NoUsableProfile
        );
    }
}

#[cfg(test)]
mod lock_tests;
