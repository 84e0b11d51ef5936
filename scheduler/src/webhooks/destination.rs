//! Where a webhook may be delivered.
//!
//! Whoever creates a run chooses its webhook URL, so without a check the
//! scheduler would POST wherever its own network reaches: the cloud's
//! metadata service, the cluster's internal services, ports on localhost
//! (server-side request forgery). By default a webhook goes only to
//! public addresses. A literal address in the URL is checked when the run
//! is created and again before each attempt; a host name is checked as it
//! is resolved for the connection ([`PublicOnly`]), so a name that later
//! resolves to an internal address (DNS rebinding) is caught too.
//! `webhooks.allow_private_destinations` lifts the check for deployments
//! whose receivers are internal. Through a configured HTTP proxy the proxy
//! resolves the name, and its own egress policy applies.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

use super::error::WebhookError;

/// What the refusal says, so an operator knows which setting decides.
const HINT: &str = "webhooks.allow_private_destinations lets webhooks reach private addresses";

/// Whether `ip` is an address on the public internet: not loopback,
/// private, link-local, shared (CGNAT), documentation, benchmarking,
/// multicast, reserved or unspecified, including IPv4 inside IPv6.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(v6),
        },
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let segments = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    // Forms that carry an IPv4 address, which decides: NAT64
    // (64:ff9b::/96) and the deprecated IPv4-compatible form (::/96) in
    // their last 32 bits, 6to4 (2002::/16) in bits 16 to 48.
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || segments[..6] == [0; 6] {
        let [.., hi, lo] = segments;
        return !ip.is_unspecified() && !ip.is_loopback() && is_public_v4(v4(hi, lo));
    }
    if segments[0] == 0x2002 {
        return is_public_v4(v4(segments[1], segments[2]));
    }
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        || ip.is_unique_local()
        || ip.is_unicast_link_local()
        // Site-local (fec0::/10): deprecated, still routed internally.
        || (segments[0] & 0xffc0) == 0xfec0
        || (segments[0] == 0x2001 && segments[1] == 0x0db8))
}

/// Refuses `url` when its host is a literal address that is not public
/// (a name is checked when it is resolved).
pub fn check_literal(url: &Url) -> Result<(), WebhookError> {
    let ip = match url.host() {
        Some(Host::Ipv4(ip)) => IpAddr::V4(ip),
        Some(Host::Ipv6(ip)) => IpAddr::V6(ip),
        Some(Host::Domain(_)) | None => return Ok(()),
    };
    if is_public(ip) {
        Ok(())
    } else {
        Err(WebhookError::Url(format!(
            "{ip} is not a public address ({HINT})"
        )))
    }
}

/// A resolver that hands the HTTP client only public addresses of a name,
/// and fails for a name that has none.
#[derive(Debug, Clone, Copy, Default)]
pub struct PublicOnly;

impl Resolve for PublicOnly {
    fn resolve(&self, name: Name) -> Resolving {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let resolved = tokio::net::lookup_host((host.as_str(), 0)).await?;
            let public: Vec<SocketAddr> = resolved.filter(|addr| is_public(addr.ip())).collect();
            if public.is_empty() {
                return Err(format!("{host} resolves to no public address ({HINT})").into());
            }
            let addrs: Addrs = Box::new(public.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn internal_addresses_are_not_public() {
        for text in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "192.0.0.8",
            "198.18.0.1",
            "224.0.0.1",
            "255.255.255.255",
            "240.0.0.1",
            "192.0.2.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "::127.0.0.1",
            "::a9fe:a9fe",
            "::10.0.0.1",
            "fec0::1",
            "feff::1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::1",
            "2002:c0a8:101::",
        ] {
            let ip: IpAddr = text.parse().unwrap();
            assert!(!is_public(ip), "{text} passed");
        }
    }

    #[test]
    fn internet_addresses_are_public() {
        for text in [
            "1.1.1.1",
            "8.8.8.8",
            "100.128.0.1",
            "172.32.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "::8.8.8.8",
            "2002:808:808::1",
        ] {
            let ip: IpAddr = text.parse().unwrap();
            assert!(is_public(ip), "{text} refused");
        }
    }

    #[test]
    fn literal_hosts_are_checked_and_names_left_to_the_resolver() {
        let check = |text: &str| check_literal(&Url::parse(text).unwrap());
        assert!(check("https://hooks.example.com/x").is_ok());
        assert!(check("https://93.184.215.14/x").is_ok());
        let refused = check("http://169.254.169.254/latest/meta-data").unwrap_err();
        assert!(
            refused.to_string().contains("allow_private_destinations"),
            "{refused}"
        );
        assert!(check("http://[::1]:8080/hook").is_err());
        assert!(
            check("http://localhost:8080/hook").is_ok(),
            "a name: resolved later"
        );
    }

    #[tokio::test]
    async fn a_name_resolving_only_to_internal_addresses_fails() {
        let name: Name = "localhost".parse().unwrap();
        let error = match PublicOnly.resolve(name).await {
            Ok(addrs) => panic!("resolved to {:?}", addrs.collect::<Vec<_>>()),
            Err(error) => error.to_string(),
        };
        assert!(error.contains("no public address"), "{error}");
    }
}
