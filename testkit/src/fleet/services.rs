//! The local RabbitMQ and Redis a distributed fleet runs on
//! (`scripts/services.sh` starts both), and what a test does without
//! them.

use std::fmt;

/// The local RabbitMQ.
pub const AMQP_URL: &str = "amqp://guest:guest@127.0.0.1:5672/%2f";
/// The local Redis.
pub const REDIS_URL: &str = "redis://127.0.0.1:6379";

/// A server the distributed fleet needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// The queue.
    RabbitMq,
    /// The store.
    Redis,
}

impl Service {
    /// Both, as a distributed fleet needs them.
    pub const FLEET: [Service; 2] = [Service::RabbitMq, Service::Redis];

    fn name(self) -> &'static str {
        match self {
            Service::RabbitMq => "RabbitMQ",
            Service::Redis => "Redis",
        }
    }

    fn addr(self) -> &'static str {
        match self {
            Service::RabbitMq => "127.0.0.1:5672",
            Service::Redis => "127.0.0.1:6379",
        }
    }
}

/// A service that does not answer; its message says what to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceMissing(Service);

impl fmt::Display for ServiceMissing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is not reachable at {}: run `scripts/services.sh` to start it",
            self.0.name(),
            self.0.addr()
        )
    }
}

impl std::error::Error for ServiceMissing {}

/// Fails with the first of `services` that does not accept a connection.
pub async fn check(services: &[Service]) -> Result<(), ServiceMissing> {
    for &service in services {
        if tokio::net::TcpStream::connect(service.addr())
            .await
            .is_err()
        {
            return Err(ServiceMissing(service));
        }
    }
    Ok(())
}

/// Whether this is a CI run (`CI=true`): there a missing service or tool
/// fails a test instead of skipping it.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_service_says_what_to_start() {
        assert_eq!(
            ServiceMissing(Service::Redis).to_string(),
            "Redis is not reachable at 127.0.0.1:6379: run `scripts/services.sh` to start it"
        );
    }

    #[tokio::test]
    async fn no_services_is_nothing_missing() {
        assert_eq!(check(&[]).await, Ok(()));
    }
}
