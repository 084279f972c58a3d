//! Shared value types and their one parser each, which every other module may use (pure, no
//! I/O, except [`file`](mod@file), the one bounded reader and atomic writer of whole files, and
//! [`cpus`], which reads the process's CPU limits through it).
//!
//! Nothing here imports another module of the crate but `seam` (pingora's ETag comparison), so `config`, `card`, `profile` and the planes
//! can all agree on what an origin, a protocol version, a duration or a data class is without
//! depending on each other, and every error the gateway writes has one shape ([`status`]).

pub mod cpus;
pub mod data_class;
pub mod duration;
pub mod etag;
pub mod file;
pub mod media_type;
pub mod origin;
pub mod proto_name;
pub mod rfc3339;
pub mod sse;
pub mod status;
pub mod version;

pub use duration::{DurationError, parse_duration};
pub use origin::{normalize_origin, origin_of_url};
pub use version::{ProtocolVersion, VersionError};
