//! Address classes for the SSRF guard, and approved origins (pure, no I/O).
//!
//! Every address a card fetch or an interface may connect to is classified; anything but a public
//! address is refused unless the approved origin names that very address literally.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};

/// The class of an IP address, for the SSRF guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AddrClass {
    /// A globally routable address: always allowed.
    Public,
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// RFC 1918 (10/8, 172.16/12, 192.168/16) and IPv6 ULA (fc00::/7).
    Private,
    /// 169.254/16, fe80::/10.
    LinkLocal,
    /// 224/4, ff00::/8.
    Multicast,
    /// 0.0.0.0, ::, and 0/8 ("this network").
    Unspecified,
    /// 100.64/10 (carrier-grade NAT shared space).
    Cgnat,
    /// Cloud instance metadata endpoints: 169.254.169.254, fd00:ec2::254.
    Metadata,
    /// 240/4 and the broadcast address, documentation and benchmarking ranges.
    Reserved,
}

impl std::fmt::Display for AddrClass {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AddrClass::Public => "public",
            AddrClass::Loopback => "loopback",
            AddrClass::Private => "private",
            AddrClass::LinkLocal => "link-local",
            AddrClass::Multicast => "multicast",
            AddrClass::Unspecified => "unspecified",
            AddrClass::Cgnat => "CGNAT",
            AddrClass::Metadata => "cloud-metadata",
            AddrClass::Reserved => "reserved",
        })
    }
}

/// Classifies an address (pure). IPv4-mapped and IPv4-compatible IPv6 addresses are classified by
/// their IPv4 part, so `::ffff:127.0.0.1` is loopback.
pub fn classify(ip: IpAddr) -> AddrClass {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return classify_v4(v4);
            }
            let seg = v6.segments();
            // IPv4-compatible (deprecated ::a.b.c.d), excluding :: and ::1 handled below.
            if seg[..6] == [0; 6] && !(seg[6] == 0 && seg[7] <= 1) {
                return classify_v4(Ipv4Addr::new(
                    (seg[6] >> 8) as u8,
                    seg[6] as u8,
                    (seg[7] >> 8) as u8,
                    seg[7] as u8,
                ));
            }
            if v6 == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254) {
                AddrClass::Metadata
            } else if v6.is_unspecified() {
                AddrClass::Unspecified
            } else if v6.is_loopback() {
                AddrClass::Loopback
            } else if v6.is_multicast() {
                AddrClass::Multicast
            } else if seg[0] & 0xfe00 == 0xfc00 {
                AddrClass::Private
            } else if seg[0] & 0xffc0 == 0xfe80 {
                AddrClass::LinkLocal
            } else if seg[0] == 0x2001 && seg[1] == 0x0db8 {
                AddrClass::Reserved
            } else {
                AddrClass::Public
            }
        }
    }
}

fn classify_v4(v4: Ipv4Addr) -> AddrClass {
    let o = v4.octets();
    if o == [169, 254, 169, 254] {
        AddrClass::Metadata
    } else if v4.is_unspecified() || o[0] == 0 {
        AddrClass::Unspecified
    } else if v4.is_loopback() {
        AddrClass::Loopback
    } else if v4.is_private() {
        AddrClass::Private
    } else if v4.is_link_local() {
        AddrClass::LinkLocal
    } else if v4.is_multicast() {
        AddrClass::Multicast
    } else if o[0] == 100 && (o[1] & 0xc0) == 64 {
        AddrClass::Cgnat
    } else if o[0] >= 240
        || v4.is_documentation()
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        || (o[0] == 192 && o[1] == 0 && o[2] == 0)
    {
        AddrClass::Reserved
    } else {
        AddrClass::Public
    }
}

/// One approved origin: `scheme://host[:port]`, normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovedOrigin {
    pub(crate) serialized: String,
    /// The address the origin names literally, if its host is an IP literal: only that exact
    /// address may be reached even when it is loopback or private.
    pub(crate) literal: Option<IpAddr>,
}

impl ApprovedOrigin {
    /// Parses `scheme://host[:port]` (no path, query or credentials); `None` if it is not one.
    pub fn parse(s: &str) -> Option<ApprovedOrigin> {
        let serialized = crate::types::normalize_origin(s)?;
        let u = url::Url::parse(&serialized).ok()?;
        let literal = match u.host()? {
            url::Host::Ipv4(a) => Some(IpAddr::V4(a)),
            url::Host::Ipv6(a) => Some(IpAddr::V6(a)),
            url::Host::Domain(_) => None,
        };
        Some(ApprovedOrigin {
            serialized,
            literal,
        })
    }

    /// The normalised `scheme://host[:port]`.
    pub fn as_str(&self) -> &str {
        &self.serialized
    }

    /// Whether a connection to `addr` is allowed for this origin (pure).
    pub fn allows(&self, addr: IpAddr) -> bool {
        classify(addr) == AddrClass::Public || self.literal == Some(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn classify_covers_every_refused_range() {
        for (a, c) in [
            ("127.0.0.1", AddrClass::Loopback),
            ("127.255.0.9", AddrClass::Loopback),
            ("::1", AddrClass::Loopback),
            ("::ffff:127.0.0.1", AddrClass::Loopback),
            ("10.1.2.3", AddrClass::Private),
            ("172.16.0.1", AddrClass::Private),
            ("172.31.255.255", AddrClass::Private),
            ("192.168.1.1", AddrClass::Private),
            ("fd12::1", AddrClass::Private),
            ("fc00::1", AddrClass::Private),
            ("169.254.1.1", AddrClass::LinkLocal),
            ("fe80::1", AddrClass::LinkLocal),
            ("224.0.0.1", AddrClass::Multicast),
            ("ff02::1", AddrClass::Multicast),
            ("0.0.0.0", AddrClass::Unspecified),
            ("0.1.2.3", AddrClass::Unspecified),
            ("::", AddrClass::Unspecified),
            ("100.64.0.1", AddrClass::Cgnat),
            ("100.127.255.255", AddrClass::Cgnat),
            ("169.254.169.254", AddrClass::Metadata),
            ("::ffff:169.254.169.254", AddrClass::Metadata),
            ("fd00:ec2::254", AddrClass::Metadata),
            ("255.255.255.255", AddrClass::Reserved),
            ("240.0.0.1", AddrClass::Reserved),
            ("::10.0.0.1", AddrClass::Private),
        ] {
            assert_eq!(classify(ip(a)), c, "{a}");
        }
        for a in [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "2606:4700::1",
            "1.1.1.1",
        ] {
            assert_eq!(classify(ip(a)), AddrClass::Public, "{a}");
        }
    }

    #[test]
    fn a_literal_origin_allows_only_its_own_address() {
        let o = ApprovedOrigin::parse("http://127.0.0.1:7400").unwrap();
        assert!(o.allows(ip("127.0.0.1")));
        assert!(!o.allows(ip("127.0.0.2")));
        assert!(!o.allows(ip("10.0.0.1")));
        assert!(o.allows(ip("8.8.8.8")));
        let named = ApprovedOrigin::parse("http://localhost:7400").unwrap();
        assert!(!named.allows(ip("127.0.0.1")));
        assert!(!named.allows(ip("::1")));
    }
}
