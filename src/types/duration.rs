//! Durations as the configuration writes them: `"500ms"`, `"30s"`, `"5m"`, `"24h"`, `"1d"` and sums
//! such as `"1h30m"` (pure).

use std::time::Duration;

/// A duration that did not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{input:?} is not a duration (use a number and a unit, e.g. \"500ms\", \"30s\", \"5m\", \"24h\", \"1d\", or \"1h30m\")"
)]
pub struct DurationError {
    /// The text.
    pub input: String,
}

/// Parses `"250us"`, `"500ms"`, `"30s"`, `"5m"`, `"24h"`, `"1d"` and sums such as `"1h30m"` (pure).
///
/// A small local parser instead of `humantime`: the accepted grammar is exactly what the config
/// documents, no crate is added, and the unit tests below pin it down.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let err = || DurationError {
        input: input.to_owned(),
    };
    let s = input.trim();
    if s.is_empty() {
        return Err(err());
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(err());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| err())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(u8::is_ascii_alphabetic).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let part = match unit {
            "us" => Duration::from_micros(n),
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.checked_mul(60).ok_or_else(err)?),
            "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(err)?),
            "d" => Duration::from_secs(n.checked_mul(86_400).ok_or_else(err)?),
            _ => return Err(err()),
        };
        total = total.checked_add(part).ok_or_else(err)?;
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_and_reject() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_duration("1ms500us"), Ok(Duration::from_micros(1500)));
        assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("1d"), Ok(Duration::from_secs(86_400)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration(" 1h30m "), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        for bad in [
            "",
            "30",
            "s",
            "30 s",
            "1.5h",
            "-1s",
            "10y",
            "1h 30m",
            "99999999999999999999d",
            "1hh",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?} should not parse");
        }
        assert!(
            parse_duration("10y")
                .unwrap_err()
                .to_string()
                .contains("\"10y\"")
        );
    }
}
