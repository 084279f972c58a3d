//! The test kit: builders with defaults for the values tests spell out again and again (no I/O).
//!
//! Unit tests (`cfg(test)`) and the integration tests (`tests/integration`, which link the library
//! with the `testkit` feature through the crate's self dev-dependency) build their fixtures here,
//! so adding a field to [`Profile`](crate::profile::Profile) or
//! [`Integration`](crate::config::Integration) means editing one builder, not every test file:
//! - [`Profile::builder`](crate::profile::Profile::builder) and [`SkillBuilder`]: compiled profiles;
//! - [`Integration::builder`](crate::config::Integration::builder): validated `[[integrations]]`
//!   entries, without parsing TOML;
//! - [`ConfigToml`] and [`IntegrationToml`]: config *text* (what the gateway reads from disk),
//!   and [`ConfigToml::parse`] for a validated [`Config`](crate::config::Config);
//! - [`CardJson`]: Agent Card JSON as an agent serves it;
//! - [`hostile`]: the one set of hostile-input generators (proptest strategies);
//! - [`pb`]: the gRPC binding's protobuf messages as an agent sends them.
//!
//! A usable state from the two builders is `state::IntegrationState::for_tests`, kept in `state`
//! itself: the kit uses nothing above `config` and `profile`, so the tests of `state` and of
//! every module above it can use the kit without an import circle.
//!
//! Off by default (`testkit` feature): on only in `cfg(test)` builds and in a cargo call that
//! builds a target with dev-dependencies (an integration test, bench or example), where the self
//! dev-dependency turns it on for every unit of that call, a binary built alongside included. So
//! the shipped binary is built in a cargo call of its own (`deploy/Dockerfile`,
//! `scripts/{run,test,bench,soak}.sh`) and holds none of it. Test code may use any layer, so the
//! kit sits beside the layers rather than in one (`scripts/check-layers.sh`).

mod card;
mod config;
pub mod hostile;
mod integration;
pub mod pb;
mod profile;

pub use card::CardJson;
pub use config::{ConfigToml, IntegrationToml};
pub use integration::IntegrationBuilder;
pub use profile::{ProfileBuilder, SkillBuilder};
