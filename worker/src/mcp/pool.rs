//! The worker's MCP connections, shared by every run it steps: one per
//! [`Endpoint`] (a server with its resolved values), so runs of one spec
//! share a server process while runs forwarding different headers get
//! their own connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::connection::Connection;
use super::endpoint::Endpoint;

/// How many connections a worker keeps; past it, idle ones are closed
/// (their processes stop) before a new one opens.
pub const MAX_CONNECTIONS: usize = 64;

/// Connections by endpoint.
#[derive(Default)]
pub struct McpPool {
    connections: Mutex<HashMap<u64, Arc<Connection>>>,
}

impl McpPool {
    /// The connection to `endpoint`, made (not started) on first use.
    pub fn connection(&self, endpoint: Endpoint) -> Arc<Connection> {
        let key = endpoint.key();
        let mut connections = self.connections.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(connection) = connections.get(&key) {
            return Arc::clone(connection);
        }
        if connections.len() >= MAX_CONNECTIONS {
            connections.retain(|_, c| Arc::strong_count(c) > 1);
        }
        let connection = Arc::new(Connection::new(endpoint));
        connections.insert(key, Arc::clone(&connection));
        connection
    }

    /// How many connections the pool holds.
    pub fn len(&self) -> usize {
        self.connections
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    /// Whether the pool holds none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::mcp::endpoint::Transport;

    fn endpoint(command: &str) -> Endpoint {
        Endpoint {
            server: "s".into(),
            transport: Transport::Stdio {
                command: command.into(),
                args: Vec::new(),
                env: Vec::new(),
            },
            timeout: Duration::from_secs(1),
            startup_timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn one_connection_per_endpoint_and_idle_ones_go_past_the_cap() {
        let pool = McpPool::default();
        let held = pool.connection(endpoint("a"));
        assert!(Arc::ptr_eq(&held, &pool.connection(endpoint("a"))));
        for i in 0..MAX_CONNECTIONS {
            pool.connection(endpoint(&format!("idle-{i}")));
        }
        // Full: the idle ones went, the held one stays.
        assert_eq!(pool.len(), 2);
        assert!(Arc::ptr_eq(&held, &pool.connection(endpoint("a"))));
    }
}
