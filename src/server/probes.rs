//! The probes' way to the agents (network I/O): the control plane's card client — approved
//! origins only, checked and pinned addresses, size cap, no redirects — with the integration's
//! credential, as [`crate::probe::Transport`]. Used by the gateway's probe runner and by
//! `a2a-egress probe` / `lock`, so on-demand and scheduled probes reach agents the same way.

use std::sync::Arc;

use crate::config::Config;
use bytes::Bytes;

use crate::control::fetch::{CardFetcher, FetchPolicy, Outgoing};
use crate::control::refresh::ControlHandle;
use crate::probe::runner::{Connect, NoTransport};
use crate::probe::{Request, Response, Transport, TransportError};
use crate::state::IntegrationState;

/// The card client with one integration's policy and credential.
pub struct Direct {
    fetcher: CardFetcher,
    policy: FetchPolicy,
    authorization: Option<http::HeaderValue>,
}

impl Direct {
    /// The transport to `state`'s agent under `config` (its approved origins, its CA file).
    pub fn new(
        fetcher: CardFetcher,
        config: &Config,
        state: &IntegrationState,
    ) -> Result<Direct, NoTransport> {
        let policy = crate::control::refresh::fetch_policy(&state.integration, config)
            .map_err(|e| NoTransport(format!("the integration's origins: {e}")))?;
        Ok(Direct {
            fetcher,
            policy,
            authorization: state.upstream().and_then(|u| u.authorization.clone()),
        })
    }
}

/// The id of the JSON-RPC answers a gRPC agent's are made into (the judgement reads no id).
const PROBE_ID: &str = "\"a2a-egress-probe\"";

/// The most messages a streaming probe reads: the judgement needs the first; a few more show
/// the stream goes on, and the bound keeps a probe from reading a stream forever.
const STREAM_MESSAGES: usize = 8;

/// How a probe rpc's answers read as the JSON-RPC answers a JSON-RPC agent would give, in 1.0:
/// the operation, and whether the agent is on the 0.3 service.
#[derive(Clone, Copy)]
struct Answers {
    op: crate::translate::Op,
    v03: bool,
}

impl Answers {
    /// A unary answer (an empty body when it does not decode: no A2A answer to judge).
    fn whole(self, bytes: &[u8]) -> Vec<u8> {
        use crate::translate::{grpc, grpc03};
        match self.v03 {
            true => grpc03::answer_to10(self.op, Some(PROBE_ID), bytes),
            false => grpc::answer_to_rpc(self.op, PROBE_ID, bytes),
        }
        .unwrap_or_default()
    }

    /// A stream message; `None` when it does not decode (the judgement counts what is A2A).
    fn event(self, bytes: &[u8]) -> Option<Vec<u8>> {
        use crate::translate::{grpc, grpc03};
        match self.v03 {
            true => grpc03::event_to10(self.op, Some(PROBE_ID), bytes).map(|t| t.json),
            false => grpc::answer_to_rpc(self.op, PROBE_ID, bytes),
        }
        .ok()
    }

    /// The agent's error status.
    fn status(self, s: &tonic::Status) -> Vec<u8> {
        use crate::translate::{grpc, grpc03};
        let code = s.code() as i32;
        if self.v03 {
            return grpc03::status_to10(self.op, Some(PROBE_ID), code, s.message()).1;
        }
        let status = grpc::Status {
            code,
            message: s.message(),
            details: s.details(),
        };
        grpc::status_to_rpc(self.op, PROBE_ID, status)
    }
}

impl Direct {
    /// A probe of a gRPC agent: rpc `path` (of the 1.0 or the 0.3 service) with the request's
    /// protobuf body, its headers (and the credential) as metadata, answered as the JSON-RPC
    /// answer (or event stream) a JSON-RPC agent would give ([`crate::translate::grpc`],
    /// [`crate::translate::grpc03`]).
    async fn send_grpc(&self, path: &'static str, r: Request) -> Result<Response, TransportError> {
        use crate::control::grpc_call;
        let failed = |e: crate::control::fetch::FetchError| TransportError {
            kind: e.kind(),
            detail: e.to_string(),
        };
        let v03 = crate::translate::grpc03::op_of_path(path);
        let op = (v03.or_else(|| crate::translate::grpc::op_of_path(path))).ok_or_else(|| {
            TransportError {
                kind: "request",
                detail: format!("{path} is no rpc of the A2A service"),
            }
        })?;
        let answers = Answers {
            op,
            v03: v03.is_some(),
        };
        let mut headers = r.headers;
        if let Some(a) = &self.authorization {
            headers.insert(http::header::AUTHORIZATION, a.clone());
        }
        let metadata = tonic::metadata::MetadataMap::from_headers(headers);
        let body = r.body.unwrap_or_default();
        let json = |body: Vec<u8>| Response {
            status: 200,
            content_type: Some("application/json".into()),
            body: Bytes::from(body),
        };
        if !crate::translate::grpc::streams(op) {
            let got = grpc_call::unary(&r.url, path, body, metadata, &self.policy)
                .await
                .map_err(failed)?;
            return Ok(json(match got {
                Ok(bytes) => answers.whole(&bytes),
                Err(s) => answers.status(&s),
            }));
        }
        let got = grpc_call::streaming(&r.url, path, body, metadata, &self.policy, STREAM_MESSAGES)
            .await
            .map_err(failed)?;
        // Refused before any message: a plain JSON-RPC error, as JSON-RPC agents answer.
        if let (true, Some(s)) = (got.messages.is_empty(), &got.status) {
            return Ok(json(answers.status(s)));
        }
        let mut sse = Vec::new();
        for m in got.messages.iter().filter_map(|m| answers.event(m)) {
            push_event(&mut sse, &m);
        }
        if let Some(s) = &got.status {
            push_event(&mut sse, &answers.status(s));
        }
        Ok(Response {
            status: 200,
            content_type: Some("text/event-stream".into()),
            body: Bytes::from(sse),
        })
    }
}

/// One SSE event of `json` (compact JSON, one line: what the translator writes).
fn push_event(sse: &mut Vec<u8>, json: &[u8]) {
    sse.extend_from_slice(b"data: ");
    sse.extend_from_slice(json);
    sse.extend_from_slice(b"\n\n");
}

#[async_trait::async_trait]
impl Transport for Direct {
    async fn send(&self, r: Request) -> Result<Response, TransportError> {
        if let Some(path) = r.grpc {
            return self.send_grpc(path, r).await;
        }
        let mut headers = r.headers;
        if let Some(a) = &self.authorization {
            headers.insert(http::header::AUTHORIZATION, a.clone());
        }
        let out = Outgoing {
            method: r.method,
            url: r.url,
            headers,
            body: r.body,
            follow_redirects: false,
        };
        let got = self
            .fetcher
            .send(out, &self.policy)
            .await
            .map_err(|e| TransportError {
                kind: e.kind(),
                detail: e.to_string(),
            })?;
        Ok(Response {
            status: got.status.as_u16(),
            content_type: got
                .headers
                .get(http::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            body: got.body,
        })
    }
}

/// The runner's transports, under the control plane's current config.
pub struct Connector {
    /// Where the current config comes from (it follows reloads).
    pub control: ControlHandle,
    /// The shared card client.
    pub fetcher: Arc<CardFetcher>,
}

impl Connect for Connector {
    fn transport(&self, state: &IntegrationState) -> Result<Box<dyn Transport>, NoTransport> {
        let config = self.control.config();
        Ok(Box::new(Direct::new(
            (*self.fetcher).clone(),
            &config,
            state,
        )?))
    }
}
