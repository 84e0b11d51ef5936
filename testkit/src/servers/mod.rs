//! RabbitMQ and Redis servers of one test alone, on free loopback ports
//! and in a temporary directory, so a test can stop, kill, pause and
//! restart them without touching the shared services.
//!
//! Each server is a child process group of the test: dropping its handle
//! SIGKILLs the group and removes the directory, so a test that panics
//! leaves nothing running. A restart reuses the port and the data
//! directory, as a server restarted in place does: clients find it where
//! it was, holding what it had persisted.

mod process;
mod rabbitmq;
mod redis;

pub use process::free_port;
pub use rabbitmq::{PrivateRabbit, RabbitOptions};
pub use redis::{PrivateRedis, RedisOptions};
