//! Agent Cards: the wire model, strict validation, JWS signature checks and the gateway's own
//! signatures (reads trusted key files only when no keys were loaded for it).
//!
//! The flow is always `validate` (bytes → [`ValidatedCard`], here) then `compile` (pure:
//! [`ValidatedCard`] + client capabilities → a compiled profile, in `profile`).
//! Nothing downstream reads raw card JSON.
//!
//! Public API (stable; other modules build on it):
//! - [`validate()`]`(bytes: &[u8], policy: &CardPolicy, origin: Option<&str>) -> Result<ValidatedCard, CardErrors>`:
//!   every rule of [`validate`](mod@validate) (size first, then JSON, duplicate keys, 0.3 detection
//!   and the 0.3 schema with conversion into the 1.0 model (`v03`),
//!   REQUIRED fields and types, URLs, ids, limits, signatures). On failure, [`CardErrors`] lists
//!   every problem, each a [`CardError`] whose message starts with the JSON path of the field
//!   (`supportedInterfaces[1].url: …`). `origin` (`scheme://host[:port]`, where the card was
//!   fetched) scopes which trusted keys may verify its signatures.
//! - [`validate_with_keys`]: the same with [`signature::TrustedKeys`] loaded once by the caller
//!   ([`validate()`] reads the configured JWKS files, only when the card is signed).
//! - [`CardPolicy`]: how strictly cards are read (size cap, signatures, plain http, trusted keys).
//! - [`wire::read_bounded`]: read a card from a stream without buffering more than the limit + 1 byte.
//!

pub mod canonical;
mod policy;
mod problem;
mod rules;
pub mod sanitize;
pub mod sign;
pub mod signature;
pub(crate) mod text;
mod v03;
pub mod validate;
pub mod wire;

pub use policy::{CardPolicy, DEFAULT_MAX_CARD_BYTES};
pub use validate::{
    CardError, CardErrors, CardWarning, SignatureStatus, ValidatedCard, validate,
    validate_with_keys,
};
