//! Reading an AMQP URL.
//!
//! lapin's parser takes the host from `Url::domain`, which an IP literal
//! does not have, and then falls back to `localhost`: `amqp://10.0.0.5/`
//! would silently connect to this machine's broker instead. The host is
//! put back from the URL itself.

use lapin::uri::AMQPUri;
use url::{Host, Url};

use crate::QueueError;

/// Parses `url` as lapin does, with an IP literal host kept. The error
/// never quotes the URL: it may hold a password.
pub(super) fn parse(url: &str) -> Result<AMQPUri, QueueError> {
    let invalid = || {
        QueueError::Connection("not an AMQP URL (amqp[s]://user:password@host:port/vhost)".into())
    };
    let mut uri: AMQPUri = url.parse().map_err(|_| invalid())?;
    match Url::parse(url).map_err(|_| invalid())?.host() {
        Some(Host::Ipv4(ip)) => uri.authority.host = ip.to_string(),
        Some(Host::Ipv6(ip)) => uri.authority.host = ip.to_string(),
        Some(Host::Domain(_)) | None => {}
    }
    Ok(uri)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_port(url: &str) -> (String, u16) {
        let uri = parse(url).unwrap();
        (uri.authority.host, uri.authority.port)
    }

    #[test]
    fn ip_literal_hosts_are_kept() {
        assert_eq!(
            host_port("amqp://guest:guest@10.1.2.3:5673/%2f"),
            ("10.1.2.3".to_owned(), 5673)
        );
        assert_eq!(host_port("amqp://[::1]:5672"), ("::1".to_owned(), 5672));
        assert_eq!(
            host_port("amqps://u:p@192.168.0.9/vhost"),
            ("192.168.0.9".to_owned(), 5671)
        );
    }

    #[test]
    fn names_and_defaults_are_lapins() {
        assert_eq!(
            host_port("amqp://u:p@rabbitmq.fleet.svc:5672/%2f"),
            ("rabbitmq.fleet.svc".to_owned(), 5672)
        );
        let uri = parse("amqp://u:p@broker/prod").unwrap();
        assert_eq!(
            (uri.vhost.as_str(), uri.authority.userinfo.password.as_str()),
            ("prod", "p")
        );
    }

    #[test]
    fn a_bad_url_is_refused_without_quoting_it() {
        for bad in [
            "http://u:s3cret@host/",
            "amqp://u:s3cret@host:notaport/",
            "s3cret",
        ] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(!err.contains("s3cret"), "{err}");
            assert!(err.contains("not an AMQP URL"), "{err}");
        }
    }
}
