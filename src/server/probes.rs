//! The probes' way to the agents (network I/O): the control plane's card client — approved
//! origins only, checked and pinned addresses, size cap, no redirects — with the integration's
//! credential, as [`crate::probe::Transport`]. Used by the gateway's probe runner and by
//! `a2a-egress probe` / `lock`, so on-demand and scheduled probes reach agents the same way.

use std::sync::Arc;

use crate::config::Config;
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

#[async_trait::async_trait]
impl Transport for Direct {
    async fn send(&self, r: Request) -> Result<Response, TransportError> {
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
