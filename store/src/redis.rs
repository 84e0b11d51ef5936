//! The Redis implementation of [`crate::Store`].

/// A store on Redis.
pub struct RedisStore;
