//! The A2A protocol version, `Major.Minor` (A2A specification, "Protocol Versioning"): the one
//! parser for versions in the config, in a card's `protocolVersion` and in an `A2A-Version`
//! header (pure).
//!
//! A number is `0` or has no leading zero, so one version has exactly one spelling: `"1.0"` and
//! `"01.0"` cannot both name 1.0, and comparing the strings of two parsed versions is comparing
//! the versions.

use std::fmt;
use std::str::FromStr;

/// A `Major.Minor` protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProtocolVersion {
    /// The major version.
    pub major: u32,
    /// The minor version.
    pub minor: u32,
}

/// Text that is not a protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    /// Not two dot-separated numbers (or, in a header, three).
    #[error("not Major.Minor")]
    Shape,
    /// A part is empty, has a character other than an ASCII digit, or a leading zero.
    #[error("a version number is not a decimal number without leading zeros")]
    Number,
    /// A number does not fit in 32 bits.
    #[error("a version number is too large")]
    TooLarge,
}

impl VersionError {
    /// Bounded label for logs and metrics.
    pub fn kind(self) -> &'static str {
        match self {
            VersionError::Shape => "shape",
            VersionError::Number => "number",
            VersionError::TooLarge => "too_large",
        }
    }
}

/// One version number: `0`, or ASCII digits without a leading zero.
fn number(s: &str) -> Result<u32, VersionError> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return Err(VersionError::Number);
    }
    s.parse().map_err(|_| VersionError::TooLarge)
}

impl ProtocolVersion {
    /// Parses exactly `Major.Minor` (config values, a card's `protocolVersion`): no whitespace, no
    /// sign, no patch, no leading zeros.
    pub fn parse(s: &str) -> Result<ProtocolVersion, VersionError> {
        let mut it = s.split('.');
        match (it.next(), it.next(), it.next()) {
            (Some(a), Some(b), None) => Ok(ProtocolVersion {
                major: number(a)?,
                minor: number(b)?,
            }),
            _ => Err(VersionError::Shape),
        }
    }

    /// Parses an `A2A-Version` header value: surrounding whitespace trimmed, then `Major.Minor`
    /// optionally followed by `.Patch`, which is checked and ignored (patch numbers take no part in
    /// negotiation).
    pub fn from_header(s: &str) -> Result<ProtocolVersion, VersionError> {
        let s = s.trim();
        let mut it = s.splitn(3, '.');
        match (it.next(), it.next(), it.next()) {
            (Some(a), Some(b), patch) => {
                let v = ProtocolVersion {
                    major: number(a)?,
                    minor: number(b)?,
                };
                if let Some(p) = patch {
                    number(p)?;
                }
                Ok(v)
            }
            _ => Err(VersionError::Shape),
        }
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl FromStr for ProtocolVersion {
    type Err = VersionError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ProtocolVersion::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn major_minor_refuses_leading_zeros() {
        for good in ["1.0", "0.3", "10.12", "0.0"] {
            let v = ProtocolVersion::parse(good).unwrap_or_else(|e| panic!("{good}: {e}"));
            assert_eq!(v.to_string(), good, "one spelling per version");
        }
        for bad in [
            "01.0", "1.00", "00.1", "1.01", "1", "1.0.0", "v1.0", "", ".", "1.", " 1.0", "+1.0",
            "1.-0", "١.٠",
        ] {
            assert!(ProtocolVersion::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ProtocolVersion::parse("4294967296.0"),
            Err(VersionError::TooLarge)
        );
    }

    #[test]
    fn header_values_ignore_the_patch_and_surrounding_space() {
        for (header, want) in [
            ("1.0", "1.0"),
            (" 1.0 ", "1.0"),
            ("1.0.9", "1.0"),
            ("0.3", "0.3"),
        ] {
            assert_eq!(
                ProtocolVersion::from_header(header).map(|v| v.to_string()),
                Ok(want.to_owned()),
                "{header:?}"
            );
        }
        for bad in [
            "01.0", "1", "1.0.x", "1.0.", "1.0.0.0", "1 .0", "", "1.0.01",
        ] {
            assert!(ProtocolVersion::from_header(bad).is_err(), "{bad:?}");
        }
    }
}
