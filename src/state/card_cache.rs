//! The effective card kept beside the state it was rendered from, so serving it is a pointer
//! copy (no I/O).
//!
//! Rendering (and signing) the card of an agent with thousands of skills costs milliseconds of
//! CPU; done on every GET, anyone who can reach the data plane could keep the gateway busy with
//! card fetches. So the data plane renders a state's card once, on its first GET, and keeps it
//! here. A state is immutable once in a snapshot, and every change (a new profile, a streaming
//! override, a config reload) builds a new state, which renders anew. A state derived by `clone`
//! (new evidence, a refresh's freshness, a probe run) starts from its parent's rendering and keeps
//! it when the card's inputs are the same: the integration entry and the usable profile (compared
//! by pointer: both are replaced, never edited in place), the streaming override, and what the
//! renderer adds ([`CardContext`]: the public URL and the signer). Those inputs are checked on
//! every use too, so a state edited after its card was rendered (or read by another renderer) is
//! rendered anew rather than served a card that no longer matches it.

use std::sync::{Arc, Mutex, OnceLock};

use crate::config::Integration;
use crate::profile::Profile;
use crate::types::etag::Tagged;

use super::{IntegrationState, Status};

/// What the renderer adds to a state's own inputs: the gateway's public URL and which signer
/// signs the card (`0`: none; each signer has its own number).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CardContext<'a> {
    /// The data plane's base URL (no trailing slash).
    pub public_url: &'a str,
    /// The signer's identity, `0` without one.
    pub signer: u64,
}

/// One state's rendered effective card (see the module doc).
#[derive(Default)]
pub struct CardCache {
    /// The card rendered for this state, with the inputs it was rendered from.
    cell: OnceLock<Arc<Rendering>>,
    /// The rendering of the state this one was cloned from, taken when this one first renders.
    seed: Mutex<Option<Arc<Rendering>>>,
}

/// A card (`None`: the state has none to serve) and what it was rendered from.
struct Rendering {
    integration: Arc<Integration>,
    profile: Option<Arc<Profile>>,
    streaming_off: bool,
    public_url: String,
    signer: u64,
    card: Option<Tagged>,
}

impl Rendering {
    fn of(state: &IntegrationState, context: CardContext<'_>, card: Option<Tagged>) -> Rendering {
        Rendering {
            integration: state.integration.clone(),
            profile: usable_profile(state).cloned(),
            streaming_off: state.overrides.streaming_off,
            public_url: context.public_url.to_owned(),
            signer: context.signer,
            card,
        }
    }

    /// Whether this was rendered from `state`'s inputs under `context` (pointer comparisons and a
    /// short string: no allocation).
    fn fits(&self, state: &IntegrationState, context: CardContext<'_>) -> bool {
        Arc::ptr_eq(&self.integration, &state.integration)
            && match (&self.profile, usable_profile(state)) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
            && self.streaming_off == state.overrides.streaming_off
            && self.signer == context.signer
            && self.public_url == context.public_url
    }
}

/// The profile an effective card is rendered from: only a usable state has one to serve.
fn usable_profile(state: &IntegrationState) -> Option<&Arc<Profile>> {
    match &state.status {
        Status::Usable { profile, .. } => Some(profile),
        _ => None,
    }
}

impl CardCache {
    /// The card of `state` under `context`: the one kept, else `render()`'s, kept for the next
    /// call. Concurrent first calls render once (the others wait for it).
    pub(super) fn get_or_render(
        &self,
        state: &IntegrationState,
        context: CardContext<'_>,
        render: impl Fn() -> Option<Tagged>,
    ) -> Option<Tagged> {
        let kept = self.cell.get_or_init(|| match self.take_seed() {
            Some(seed) if seed.fits(state, context) => seed,
            _ => Arc::new(Rendering::of(state, context, render())),
        });
        if kept.fits(state, context) {
            kept.card.clone()
        } else {
            // Inputs changed after this state rendered (it was edited, or another renderer
            // asks): a card that no longer matches is never served.
            render()
        }
    }

    /// Whether a card has been rendered for this state.
    pub fn is_rendered(&self) -> bool {
        self.cell.get().is_some()
    }

    fn take_seed(&self) -> Option<Arc<Rendering>> {
        self.seed.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    fn seed(&self) -> Option<Arc<Rendering>> {
        self.seed.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Clone for CardCache {
    /// A clone is another state: it renders for itself, starting from this one's rendering.
    fn clone(&self) -> CardCache {
        CardCache {
            cell: OnceLock::new(),
            seed: Mutex::new(self.cell.get().cloned().or_else(|| self.seed())),
        }
    }
}

impl std::fmt::Debug for CardCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CardCache")
            .field("rendered", &self.is_rendered())
            .finish_non_exhaustive()
    }
}
